'use strict';
// Test support: a grpc-js Bank server on loopback, and the adapter
// started as the harness starts it (its own process, through
// adapter-grpcjs), driven over stdin and stdout.

const { spawn } = require('node:child_process');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const bank = require('../bank');

const adapterBin = path.join(__dirname, '..', 'adapter-grpcjs');

/** configDir holds the service configs the harness sends (package configs embeds them). */
const configDir = path.join(__dirname, '..', '..', '..', 'configs', 'serviceconfig');

function unary(method, req, resp) {
  return {
    path: `/rpcbench.bank.v1.Bank/${method}`, requestStream: false, responseStream: false,
    requestSerialize: m => bank.encode(req, m), requestDeserialize: b => bank.decode(req, b),
    responseSerialize: m => bank.encode(resp, m), responseDeserialize: b => bank.decode(resp, b),
  };
}

const bankService = {
  Get: unary('Get', 'GetRequest', 'AccountReply'),
  Debit: unary('Debit', 'DebitRequest', 'AccountReply'),
  Echo: unary('Echo', 'EchoRequest', 'EchoReply'),
};

/**
 * startBank serves a bank on 127.0.0.1, port 0, until the test ends. A
 * debit whose x-rpcbench-call is in failFirst is answered UNAVAILABLE,
 * unexecuted, on that many attempts first; attempts holds each get and
 * debit attempt's metadata by x-rpcbench-call.
 */
async function startBank(t) {
  const b = { failFirst: new Map(), attempts: new Map() };
  const record = call => {
    const name = call.metadata.get('x-rpcbench-call').join(',');
    const att = b.attempts.get(name) ?? [];
    att.push(call.metadata);
    b.attempts.set(name, att);
    return { name, att };
  };
  const server = new grpc.Server();
  server.addService(bankService, {
    Debit(call, callback) {
      const { name, att } = record(call);
      if (att.length <= (b.failFirst.get(name) ?? 0)) {
        callback({ code: grpc.status.UNAVAILABLE, details: 'refused before executing' });
        return;
      }
      const md = new grpc.Metadata();
      md.set('x-server', 'bank');
      md.set('x-raw-bin', Buffer.from([0x00, 0xff]));
      call.sendMetadata(md);
      const trailer = new grpc.Metadata();
      trailer.set('x-attempt', String(att.length));
      callback(null, { account: call.request.account, balance: 1000n - call.request.amount, exec: 1n }, trailer);
    },
    Get(call, callback) {
      record(call);
      // Never an OK after the budget: it could reach the client before
      // its own deadline fires.
      const timer = setTimeout(() => callback(null, { account: call.request.account, balance: 1000n }),
        Number(call.request.sleep_ms));
      call.on('cancelled', () => clearTimeout(timer));
    },
    Echo(call, callback) {
      callback(null, { payload: call.request.payload });
    },
  });
  const port = await new Promise((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  const { serverNeedsStart } = require('../compat');
  if (serverNeedsStart(require('../adapter').grpcJSVersion())) {
    server.start(); // grpc-js before 1.10 serves nothing without it (compat.js)
  }
  t.after(() => server.forceShutdown());
  return { bank: b, addr: `127.0.0.1:${port}` };
}

/**
 * closedAddr returns a loopback address that nothing listens on: a port
 * the kernel handed out and that was then closed.
 */
async function closedAddr() {
  const net = require('node:net');
  const srv = net.createServer();
  await new Promise(resolve => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address();
  await new Promise(resolve => srv.close(resolve));
  return `127.0.0.1:${port}`;
}

/**
 * adapter is the adapter process, driven as the harness drives it; args
 * are its arguments (['serve'] for the server-under-test adapter).
 */
class adapter {
  constructor(t, args = []) {
    this.proc = spawn(adapterBin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.stderr = '';
    this.proc.stderr.on('data', d => {
      this.stderr += d;
    });
    this.exited = new Promise(resolve => this.proc.on('exit', (code, signal) => resolve(code ?? signal)));
    this.lines = [];
    this.waiters = [];
    this.ended = false;
    let held = '';
    this.proc.stdout.on('data', d => {
      held += d;
      let nl;
      while ((nl = held.indexOf('\n')) >= 0) {
        this.lines.push(held.slice(0, nl));
        held = held.slice(nl + 1);
      }
      this.wake();
    });
    this.proc.stdout.on('end', () => {
      this.ended = true;
      this.wake();
    });
    t.after(async () => {
      if (this.proc.exitCode === null && this.proc.signalCode === null) {
        this.proc.kill('SIGKILL');
      }
      await this.exited;
    });
  }

  wake() {
    const ws = this.waiters;
    this.waiters = [];
    ws.forEach(w => w());
  }

  send(line) {
    this.proc.stdin.write((typeof line === 'string' ? line : JSON.stringify(line)) + '\n');
  }

  /** recv resolves to the adapter's next line, decoded. */
  async recv() {
    while (this.lines.length === 0) {
      if (this.ended) {
        throw new Error(`adapter's stdout ended; its stderr:\n${this.stderr}`);
      }
      await new Promise(resolve => this.waiters.push(resolve));
    }
    const line = this.lines.shift();
    try {
      return JSON.parse(line);
    } catch (err) {
      throw new Error(`adapter wrote ${JSON.stringify(line)}: ${err.message}`);
    }
  }

  async init() {
    this.send({ type: 'init', protocol: 'rpcbench-adapter/1', scenario: 'test' });
    return this.recv();
  }
}

/** call returns a call message; over changes or adds fields. */
function call(id, addr, over = {}) {
  return {
    type: 'call', id, channel: { id: 'ch1', target: addr }, method: 'rpcbench.bank.v1.Bank/Debit',
    request: { account: 'acct-A', amount: '10' }, deadline_ms: 2000,
    metadata: { 'x-rpcbench-call': `c-${id}`, 'idempotency-key': `k-${id}` }, wait_for_ready: false,
    ...over,
  };
}

module.exports = { adapter, startBank, closedAddr, call, configDir };
