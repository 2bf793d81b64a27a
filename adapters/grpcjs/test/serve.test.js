'use strict';
// Serve mode as the harness drives it: `adapter-grpcjs serve` in its own
// process, JSON lines on stdin and stdout, and requests to the server it
// announces from grpc-js's own client.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const bank = require('../bank');
const { adapter } = require('./harness');

const opts = { timeout: 30000 };

function grpcJSInstalled() {
  const pkg = path.join(__dirname, '..', 'node_modules', '@grpc', 'grpc-js', 'package.json');
  return JSON.parse(fs.readFileSync(pkg, 'utf8')).version;
}

/** server is `adapter-grpcjs serve`, initialized, with a grpc-js client to what it serves. */
class server extends adapter {
  constructor(t) {
    super(t, ['serve']);
    this.t = t;
  }

  /** start sends init and resolves to the serving line; the client is built from its addr. */
  async start() {
    this.send({ type: 'init', protocol: 'rpcbench-server/1', scenario: 'test' });
    const s = await this.recv();
    assert.equal(s.type, 'serving', JSON.stringify(s));
    this.client = new grpc.Client(s.addr, grpc.credentials.createInsecure());
    this.t.after(() => this.client.close());
    return s;
  }

  /**
   * call makes one unary call of method; it returns the grpc-js call and
   * a promise of {err, resp}. o.name is its x-rpcbench-call (none when
   * null), o.deadlineMS its deadline (none when absent).
   */
  call(method, req, o = {}) {
    const m = bank.methods[`rpcbench.bank.v1.Bank/${method}`];
    const md = new grpc.Metadata();
    if (o.name !== null) {
      md.set('x-rpcbench-call', o.name ?? `test-${method}`);
    }
    const options = o.deadlineMS === undefined ? {} : { deadline: Date.now() + o.deadlineMS };
    let call;
    const done = new Promise(resolve => {
      call = this.client.makeUnaryRequest(`/rpcbench.bank.v1.Bank/${method}`,
        msg => bank.encode(m.request, msg), buf => bank.decode(m.response, buf),
        req, md, options, (err, resp) => resolve({ err, resp }));
    });
    return { call, done };
  }

  /** events resolves to the lines up to and including the next end. */
  async events() {
    const got = [];
    for (;;) {
      const e = await this.recv();
      got.push(e);
      if (e.type === 'end' || e.type === 'fatal') {
        return got;
      }
    }
  }
}

function types(events) {
  return events.map(e => e.type);
}

test('serving names grpc-js as installed and a loopback address', opts, async t => {
  const s = new server(t);
  const got = await s.start();
  assert.match(got.addr, /^127\.0\.0\.1:[1-9][0-9]*$/);
  delete got.addr;
  assert.deepEqual(got, {
    type: 'serving', protocol: 'rpcbench-server/1', stack: 'grpc-js', version: grpcJSInstalled(),
    runtime: `node ${process.version}`,
  });
});

test('a get and debits execute once each against one bank: start, exec, end', opts, async t => {
  const s = new server(t);
  await s.start();

  const g = s.call('Get', { account: 'acct-A' }, { name: 'get-1', deadlineMS: 5000 });
  const gr = await g.done;
  assert.ifError(gr.err);
  const ge = await s.events();
  assert.deepEqual(types(ge), ['start', 'exec', 'end']);
  const left = ge[0].deadline_ms;
  assert.ok(left > 4000 && left <= 5000, `deadline_ms ${left}, want in (4000, 5000]`);
  assert.deepEqual(ge[0], { type: 'start', call: 'get-1', method: 'Get', deadline_ms: left });
  assert.deepEqual(ge[1], { type: 'exec', call: 'get-1', method: 'Get', account: 'acct-A', amount: 0, balance: 1000 });
  assert.deepEqual(ge[2], { type: 'end', call: 'get-1', method: 'Get', executed: true, ctx: 'active', code: 'OK' });
  assert.deepEqual(gr.resp, { account: 'acct-A', balance: 1000n, exec: 0n, replayed: false, budget_ms: BigInt(Math.trunc(left)) });

  for (const [i, balance] of [[1, 990n], [2, 980n]]) {
    const d = s.call('Debit', { account: 'acct-A', amount: 10n }, { name: `debit-${i}`, deadlineMS: 5000 });
    const dr = await d.done;
    assert.ifError(dr.err);
    const de = await s.events();
    assert.deepEqual(types(de), ['start', 'exec', 'end'], `debit ${i}`);
    assert.deepEqual(de[1], { type: 'exec', call: `debit-${i}`, method: 'Debit', account: 'acct-A', amount: 10, balance: Number(balance) });
    assert.deepEqual(de[2], { type: 'end', call: `debit-${i}`, method: 'Debit', executed: true, ctx: 'active', code: 'OK' });
    assert.equal(dr.resp.balance, balance, `debit ${i}`);
    assert.equal(dr.resp.exec, BigInt(i), `debit ${i}`);
  }

  // No x-rpcbench-call and no deadline: call "", deadline_ms null, budget 0.
  const n = s.call('Debit', { account: 'acct-B', amount: 1n }, { name: null });
  const nr = await n.done;
  assert.ifError(nr.err);
  const ne = await s.events();
  assert.deepEqual(ne[0], { type: 'start', call: '', method: 'Debit', deadline_ms: null });
  assert.deepEqual(ne[1], { type: 'exec', call: '', method: 'Debit', account: 'acct-B', amount: 1, balance: 999 });
  assert.equal(nr.resp.budget_ms, 0n);
});

test('a debit sleeping past its deadline ends unexecuted', opts, async t => {
  const s = new server(t);
  await s.start();
  const d = s.call('Debit', { account: 'acct-D', amount: 10n, sleep_ms: 2000n }, { name: 'late-1', deadlineMS: 200 });
  const dr = await d.done;
  assert.equal(dr.err?.code, grpc.status.DEADLINE_EXCEEDED, `client got ${dr.err?.code}, want DEADLINE_EXCEEDED`);
  // The end follows the start directly, with no exec: if the handler
  // executed after its sleep, the exec would come before the end.
  const de = await s.events();
  assert.deepEqual(types(de), ['start', 'end'], JSON.stringify(de));
  const end = de[1];
  t.diagnostic(`end after the deadline: ctx ${end.ctx}, code ${end.code}`);
  const want = { deadline_exceeded: 'DEADLINE_EXCEEDED', cancelled: 'CANCELLED' }[end.ctx];
  assert.ok(want, `ctx ${end.ctx}, want deadline_exceeded or cancelled`);
  assert.deepEqual(end, { type: 'end', call: 'late-1', method: 'Debit', executed: false, ctx: end.ctx, code: want });

  const g = s.call('Get', { account: 'acct-D' }, { name: 'after-1' });
  assert.equal((await g.done).resp.balance, 1000n, 'balance after the unexecuted debit');
});

test('a debit working past its deadline, blind to the call, executes anyway', opts, async t => {
  const s = new server(t);
  await s.start();
  const d = s.call('Debit', { account: 'acct-W', amount: 10n, work_ms: 300n }, { name: 'work-1', deadlineMS: 100 });
  const dr = await d.done;
  assert.equal(dr.err?.code, grpc.status.DEADLINE_EXCEEDED, `client got ${dr.err?.code}, want DEADLINE_EXCEEDED`);
  const de = await s.events();
  assert.deepEqual(types(de), ['start', 'exec', 'end'], JSON.stringify(de));
  assert.deepEqual(de[1], { type: 'exec', call: 'work-1', method: 'Debit', account: 'acct-W', amount: 10, balance: 990 });
  const end = de[2];
  t.diagnostic(`end after the deadline: ctx ${end.ctx}`);
  assert.ok(['deadline_exceeded', 'cancelled'].includes(end.ctx), `ctx ${end.ctx}, want deadline_exceeded or cancelled`);
  assert.deepEqual(end, { type: 'end', call: 'work-1', method: 'Debit', executed: true, ctx: end.ctx, code: 'OK' });

  const g = s.call('Get', { account: 'acct-W' }, { name: 'after-1' });
  assert.equal((await g.done).resp.balance, 990n, 'balance after the executed debit');
});

test('a debit the client cancels while it sleeps ends unexecuted, cancelled', opts, async t => {
  const s = new server(t);
  await s.start();
  const d = s.call('Debit', { account: 'acct-C', amount: 10n, sleep_ms: 10000n }, { name: 'cancel-1' });
  const start = await s.recv();
  assert.deepEqual(start, { type: 'start', call: 'cancel-1', method: 'Debit', deadline_ms: null });
  d.call.cancel();
  assert.equal((await d.done).err?.code, grpc.status.CANCELLED);
  const de = await s.events();
  assert.deepEqual(de, [{ type: 'end', call: 'cancel-1', method: 'Debit', executed: false, ctx: 'cancelled', code: 'CANCELLED' }]);

  const g = s.call('Get', { account: 'acct-C' }, { name: 'after-1' });
  assert.equal((await g.done).resp.balance, 1000n, 'balance after the cancelled debit');
});

test('echo answers its payload and executes nothing', opts, async t => {
  const s = new server(t);
  await s.start();
  const e = s.call('Echo', { payload: Buffer.from([0, 255]) }, { name: 'echo-1', deadlineMS: 5000 });
  const er = await e.done;
  assert.ifError(er.err);
  assert.deepEqual(er.resp, { payload: Buffer.from([0, 255]) });
  const ev = await s.events();
  assert.deepEqual(types(ev), ['start', 'end']);
  assert.deepEqual(ev[1], { type: 'end', call: 'echo-1', method: 'Echo', executed: false, ctx: 'active', code: 'OK' });
});

test('a debit of a non-positive amount is INVALID_ARGUMENT, unexecuted', opts, async t => {
  const s = new server(t);
  await s.start();
  for (const amount of [0n, -5n]) {
    const d = s.call('Debit', { account: 'acct-I', amount }, { name: `bad-${amount}` });
    assert.equal((await d.done).err?.code, grpc.status.INVALID_ARGUMENT, `amount ${amount}`);
    const de = await s.events();
    assert.deepEqual(types(de), ['start', 'end'], `amount ${amount}`);
    assert.deepEqual(de[1], { type: 'end', call: `bad-${amount}`, method: 'Debit', executed: false, ctx: 'active', code: 'INVALID_ARGUMENT' });
  }
  const g = s.call('Get', { account: 'acct-I' }, { name: 'after-1' });
  assert.equal((await g.done).resp.balance, 1000n);
});

test('shutdown stops the server, answers shutdown_ok, and the adapter exits 0 at the end of stdin', opts, async t => {
  const s = new server(t);
  await s.start();
  // A call still sleeping holds up the graceful shutdown; after its 2 s
  // the server is stopped forcibly and the handler sees its call end.
  const d = s.call('Debit', { account: 'acct-S', amount: 10n, sleep_ms: 60000n }, { name: 'held-1' });
  assert.equal((await s.recv()).type, 'start');
  const began = Date.now();
  s.send({ type: 'shutdown' });
  const lines = [await s.recv(), await s.recv()];
  const took = Date.now() - began;
  assert.ok(took < 3000, `shutdown_ok after ${took} ms, want within 3000`);
  assert.deepEqual(lines.find(l => l.type === 'end'),
    { type: 'end', call: 'held-1', method: 'Debit', executed: false, ctx: 'cancelled', code: 'CANCELLED' });
  assert.ok(lines.some(l => l.type === 'shutdown_ok'), JSON.stringify(lines));
  assert.notEqual((await d.done).err, null, 'the held call succeeded');
  s.proc.stdin.end();
  assert.equal(await s.exited, 0);
});

test('the end of stdin without shutdown stops the server and exits 0, with no line', opts, async t => {
  const s = new server(t);
  await s.start();
  s.proc.stdin.end();
  assert.equal(await s.exited, 0);
  assert.deepEqual(s.lines, []);
});

test('a harness line that is not a message gets fatal and exit status 2', opts, async t => {
  const init = '{"type":"init","protocol":"rpcbench-server/1"}';
  const tests = [
    ['unknown init field', ['{"type":"init","protocol":"rpcbench-server/1","port":8080}'], 'line 1: bad init: unknown field "port"'],
    ['init without protocol', ['{"type":"init"}'], 'line 1: bad init: no "protocol"'],
    ['init of the wrong type', ['{"type":"init","protocol":1}'], 'line 1: bad init: "protocol" is number, want string'],
    ['not JSON', ['not json'], 'line 1: not a JSON object'],
    ['shutdown before init', ['{"type":"shutdown"}'], 'line 1: shutdown before init'],
    ['a second init', [init, init], 'line 2: bad init: a second init'],
    ['unknown type', [init, '{"type":"call","id":1}'], 'line 2: unknown type "call"'],
    ['shutdown with a field', [init, '{"type":"shutdown","now":true}'], 'line 2: bad shutdown: unknown field "now"'],
  ];
  for (const [name, lines, text] of tests) {
    await t.test(name, async t => {
      const s = new server(t);
      lines.forEach(l => s.send(l));
      let r = await s.recv();
      if (r.type === 'serving') {
        r = await s.recv();
      }
      assert.equal(r.type, 'fatal', JSON.stringify(r));
      assert.ok(r.text.startsWith(text), `text ${JSON.stringify(r.text)}, want it to start ${JSON.stringify(text)}`);
      assert.equal(await s.exited, 2);
    });
  }
});
