'use strict';
// Two capabilities the adapter declares that grpc-go's lacks or that need
// a misbehaving server, shown working through the adapter: grpc-js hedges,
// and retries a refused stream transparently.

const test = require('node:test');
const assert = require('node:assert/strict');
const http2 = require('node:http2');
const { adapter, startBank, call } = require('./harness');
const bank = require('../bank');

const opts = { timeout: 30000 };

test('hedging: a hedged get that is slow to answer is sent again after hedgingDelay', opts, async t => {
  const { bank: b, addr } = await startBank(t);
  const a = new adapter(t);
  await a.init();
  const sc = { methodConfig: [{ name: [{ service: 'rpcbench.bank.v1.Bank', method: 'Get' }],
    hedgingPolicy: { maxAttempts: 2, hedgingDelay: '0.05s' } }] };
  a.send(call(1, addr, {
    channel: { id: 'hedged', target: addr, service_config: sc }, method: 'rpcbench.bank.v1.Bank/Get',
    request: { account: 'h', sleepMs: '500' }, metadata: { 'x-rpcbench-call': 'hedge-1' },
  }));
  const r = await a.recv();
  assert.equal(r.code, 'OK', JSON.stringify(r));
  const prev = b.attempts.get('hedge-1').map(md => md.get('grpc-previous-rpc-attempts').join(','));
  assert.deepEqual(prev, ['', '1'], 'grpc-previous-rpc-attempts of each attempt the server saw');
});

// grpcFrame is msg in a gRPC length-prefixed message, uncompressed.
function grpcFrame(buf) {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(buf.length, 1);
  return Buffer.concat([head, buf]);
}

test('transparent retry: a stream refused with REFUSED_STREAM is retried under no service config', opts, async t => {
  // A bare HTTP/2 server: it refuses its first stream, then answers a
  // debit as a gRPC server would.
  let streams = 0;
  const server = http2.createServer();
  server.on('stream', stream => {
    streams++;
    stream.on('error', () => {}); // the refusal below, seen from this side
    if (streams === 1) {
      stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(grpcFrame(bank.encode('AccountReply', { account: 'acct-A', balance: 990n })));
  });
  const sessions = new Set();
  server.on('session', s => sessions.add(s));
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    // close waits for the sessions, which the adapter's channel holds.
    sessions.forEach(s => s.destroy());
    return new Promise(resolve => server.close(resolve));
  });
  const addr = `127.0.0.1:${server.address().port}`;
  const a = new adapter(t);
  await a.init();
  a.send(call(1, addr));
  const r = await a.recv();
  assert.equal(r.code, 'OK', JSON.stringify(r));
  assert.equal(r.response.balance, '990');
  assert.equal(streams, 2, 'streams the server saw');
});
