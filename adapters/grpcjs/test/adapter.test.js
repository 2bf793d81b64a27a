'use strict';
// The adapter as the harness drives it: its own process, JSON lines on
// stdin and stdout, calls against a grpc-js server on loopback.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { adapter, startBank, closedAddr, call, configDir } = require('./harness');

const opts = { timeout: 30000 };

function grpcJSInstalled() {
  const pkg = path.join(__dirname, '..', 'node_modules', '@grpc', 'grpc-js', 'package.json');
  return JSON.parse(fs.readFileSync(pkg, 'utf8')).version;
}

function serviceConfig(file) {
  return JSON.parse(fs.readFileSync(path.join(configDir, file), 'utf8'));
}

test('init_ok names grpc-js as installed, with its capabilities', opts, async t => {
  const a = new adapter(t);
  const got = await a.init();
  assert.deepEqual(got, {
    type: 'init_ok', protocol: 'rpcbench-adapter/1', stack: 'grpc-js', version: grpcJSInstalled(),
    runtime: `node ${process.version}`,
    capabilities: {
      retry_policy: true, hedging: true, throttling: true, transparent_retry: true,
      keepalive: true, pushback: true, wait_for_ready: true, per_attempt_timeout: false,
    },
  });
});

test('a debit and a get are answered; shutdown, then exit 0 at the end of stdin', opts, async t => {
  const { bank, addr } = await startBank(t);
  const a = new adapter(t);
  await a.init();

  a.send(call(1, addr));
  const r = await a.recv();
  assert.equal(typeof r.elapsed_ms, 'number');
  delete r.elapsed_ms;
  // grpc-js's server sends these headers besides the handler's; date varies.
  for (const h of ['content-type', 'date']) {
    assert.ok(h in r.headers, `header ${h} in ${JSON.stringify(r.headers)}`);
    delete r.headers[h];
  }
  // grpc-js's server sends grpc-message "OK" with an OK (server.ts), and
  // the client surfaces it: the message is reported as surfaced.
  assert.deepEqual(r, {
    type: 'result', id: 1, code: 'OK', code_num: 0, message: 'OK',
    response: { account: 'acct-A', balance: '990', exec: '1', replayed: false, budgetMs: '0' },
    headers: { 'x-server': ['bank'], 'x-raw-bin': ['AP8='] },
    trailers: { 'x-attempt': ['1'] },
  });
  const att = bank.attempts.get('c-1');
  assert.equal(att.length, 1, 'attempts the server saw');
  assert.deepEqual(att[0].get('idempotency-key'), ['k-1']);

  a.send(call(2, addr, { method: 'rpcbench.bank.v1.Bank/Get', request: { account: 'acct-G', sleep_ms: 0 } }));
  const g = await a.recv();
  assert.equal(g.code, 'OK');
  assert.deepEqual(g.response, { account: 'acct-G', balance: '1000', exec: '0', replayed: false, budgetMs: '0' });

  a.send({ type: 'shutdown' });
  assert.deepEqual(await a.recv(), { type: 'shutdown_ok' });
  a.proc.stdin.end();
  assert.equal(await a.exited, 0);
});

test('the deadline is grpc-js\'s: a slow get ends DEADLINE_EXCEEDED', opts, async t => {
  const { addr } = await startBank(t);
  const a = new adapter(t);
  await a.init();
  a.send(call(1, addr, {
    method: 'rpcbench.bank.v1.Bank/Get', request: { account: 'a', sleepMs: '5000' }, deadline_ms: 100,
  }));
  const r = await a.recv();
  assert.equal(r.type, 'result');
  assert.equal(r.code, 'DEADLINE_EXCEEDED');
  assert.equal(r.code_num, 4);
  assert.equal(r.response, null);
  // Not before the deadline (less the millisecond Date.now() rounds
  // off), and before the server would have answered.
  assert.ok(r.elapsed_ms >= 98 && r.elapsed_ms < 5000, `elapsed_ms ${r.elapsed_ms}, want about 100`);
});

test('wait_for_ready is grpc-js\'s option: fail-fast UNAVAILABLE, waiting DEADLINE_EXCEEDED', opts, async t => {
  const addr = await closedAddr();
  const a = new adapter(t);
  await a.init();
  a.send(call(1, addr, { deadline_ms: 1000 }));
  const fast = await a.recv();
  assert.equal(fast.code, 'UNAVAILABLE', JSON.stringify(fast));
  a.send(call(2, addr, { channel: { id: 'ch2', target: addr }, deadline_ms: 300, wait_for_ready: true }));
  const waited = await a.recv();
  assert.equal(waited.code, 'DEADLINE_EXCEEDED', JSON.stringify(waited));
});

test('a retry policy from the harness is grpc-js\'s: refused twice, OK on the third attempt', opts, async t => {
  const { bank, addr } = await startBank(t);
  bank.failFirst.set('retry-1', 2);
  bank.failFirst.set('default-1', 2);
  const a = new adapter(t);
  await a.init();

  a.send(call(1, addr, {
    channel: { id: 'retry', target: addr, service_config: serviceConfig('retry.json') },
    metadata: { 'x-rpcbench-call': 'retry-1' },
  }));
  const r = await a.recv();
  assert.equal(r.code, 'OK', JSON.stringify(r));
  const prev = bank.attempts.get('retry-1').map(md => md.get('grpc-previous-rpc-attempts').join(','));
  assert.deepEqual(prev, ['', '1', '2'], 'grpc-previous-rpc-attempts of each attempt');

  a.send(call(2, addr, { channel: { id: 'default', target: addr }, metadata: { 'x-rpcbench-call': 'default-1' } }));
  const d = await a.recv();
  assert.deepEqual([d.code, d.code_num, d.message], ['UNAVAILABLE', 14, 'refused before executing']);
  assert.equal(bank.attempts.get('default-1').length, 1, 'attempts under no service config');
});

test('grpc-js builds a channel from every service config the harness sends', opts, async t => {
  const { addr } = await startBank(t);
  const files = fs.readdirSync(configDir).filter(f => f.endsWith('.json'));
  assert.ok(files.length >= 2, `found ${files} in ${configDir}, want the harness's configs`);
  const a = new adapter(t);
  await a.init();
  for (const [i, f] of files.entries()) {
    a.send(call(i + 1, addr, { channel: { id: f, target: addr, service_config: serviceConfig(f) } }));
    const r = await a.recv();
    assert.equal(r.code, 'OK', `${f}: ${JSON.stringify(r)}`);
  }
});

test('what the adapter does not invoke is a call_error of the protocol\'s kind', opts, async t => {
  const { addr } = await startBank(t);
  const a = new adapter(t);
  await a.init();
  a.send(call(1, addr));
  assert.equal((await a.recv()).code, 'OK');

  const badSC = serviceConfig('retry.json');
  badSC.methodConfig[0].retryPolicy.initialBackoff = '100ms';
  const { deadline_ms: _, ...noDeadline } = call(6, addr);
  const tests = [
    ['bad service config', call(2, addr, { channel: { id: 'bad', target: addr, service_config: badSC } }), 'config', 'initialBackoff'],
    ['duplicate id', call(1, addr), 'duplicate_id', 'id 1 was used before'],
    ['unknown method', call(3, addr, { method: 'rpcbench.bank.v1.Bank/Transfer' }), 'unsupported', 'no method "rpcbench.bank.v1.Bank/Transfer"'],
    ['bad request', call(4, addr, { request: { account: 'a', amount: 'ten' } }), 'bad_request', 'amount'],
    ['unknown request field', call(5, addr, { request: { account: 'a', cents: '1' } }), 'bad_request', 'unknown field "cents"'],
    ['unknown field', call(7, addr, { retries: 3 }), 'protocol', 'unknown field "retries"'],
    ['missing field', noDeadline, 'protocol', 'no "deadline_ms"'],
    ['wrong type', call(8, addr, { wait_for_ready: 'no' }), 'protocol', '"wait_for_ready" is string, want bool'],
    ['unknown channel field', call(9, addr, { channel: { id: 'ch1', target: addr, tls: true } }), 'protocol', 'unknown field "tls"'],
    ['keepalive without a field', call(10, addr, { channel: { id: 'k', target: addr, keepalive: { time_ms: 10000, timeout_ms: 1000 } } }), 'protocol', 'no "permit_without_stream"'],
    ['zero deadline', call(11, addr, { deadline_ms: 0 }), 'protocol', 'deadline_ms 0 < 1'],
    ['reconfigured channel', call(12, addr, { channel: { id: 'ch1', target: addr, service_config: serviceConfig('retry.json') } }), 'protocol', 'channel ch1 was first configured otherwise'],
  ];
  for (const [name, line, kind, text] of tests) {
    a.send(line);
    const r = await a.recv();
    assert.equal(r.type, 'call_error', `${name}: ${JSON.stringify(r)}`);
    assert.equal(r.kind, kind, `${name}: ${JSON.stringify(r)}`);
    assert.ok(r.text.includes(text), `${name}: text ${JSON.stringify(r.text)}, want it to contain ${JSON.stringify(text)}`);
    assert.equal(r.id, line.id, name);
  }
});

test('a line that is not a message gets fatal and exit status 2', opts, async t => {
  const tests = [
    ['not JSON', 'not json', 'line 2: not a JSON object'],
    ['no type', '{"id":1}', 'line 2: no string "type"'],
    ['unknown type', '{"type":"cancel","id":1}', 'line 2: unknown type "cancel"'],
    ['call without an id', '{"type":"call","id":0}', 'line 2: call without a usable id'],
  ];
  for (const [name, line, text] of tests) {
    await t.test(name, async t => {
      const a = new adapter(t);
      await a.init();
      a.send(line);
      const r = await a.recv();
      assert.equal(r.type, 'fatal', JSON.stringify(r));
      assert.ok(r.text.startsWith(text), `text ${JSON.stringify(r.text)}, want it to start ${JSON.stringify(text)}`);
      assert.equal(await a.exited, 2);
    });
  }
});
