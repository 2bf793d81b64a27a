'use strict';
// The hand-written Bank messages against bank.proto and the protobuf
// wire format.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const bank = require('../bank');

const protoFile = path.join(__dirname, '..', '..', '..', 'proto', 'rpcbench', 'bank', 'v1', 'bank.proto');

function lowerCamel(name) {
  return name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
}

test('bank.js has exactly the messages, fields and methods of bank.proto', () => {
  const src = fs.readFileSync(protoFile, 'utf8').replace(/\/\/.*$/gm, '');
  const want = {};
  for (const [, msg, body] of src.matchAll(/message\s+(\w+)\s*\{([^}]*)\}/g)) {
    want[msg] = [...body.matchAll(/(\w+)\s+(\w+)\s*=\s*(\d+)\s*;/g)].map(([, type, name, num]) => (
      { num: Number(num), name, json: lowerCamel(name), type }));
  }
  assert.deepEqual(bank.messages, want);
  const rpcs = {};
  for (const [, name, req, resp] of src.matchAll(/rpc\s+(\w+)\s*\(\s*(\w+)\s*\)\s*returns\s*\(\s*(\w+)\s*\)/g)) {
    rpcs[`rpcbench.bank.v1.Bank/${name}`] = { request: req, response: resp };
  }
  assert.deepEqual(bank.methods, rpcs);
});

test('encode writes the protobuf wire format', () => {
  const tests = [
    ['DebitRequest', { account: 'a', amount: 10n }, '0a0161100a'],
    ['DebitRequest', { account: '', amount: 0n, sleep_ms: 0n }, ''],
    ['DebitRequest', { amount: -1n }, '10ffffffffffffffffff01'],
    ['GetRequest', { account: 'é', sleep_ms: 300n }, '0a02c3a910ac02'],
    ['EchoRequest', { payload: Buffer.from([0, 255]) }, '0a0200ff'],
    ['AccountReply', { replayed: true, budget_ms: 1n }, '20012801'],
  ];
  for (const [type, msg, hex] of tests) {
    assert.equal(bank.encode(type, msg).toString('hex'), hex, `${type} ${JSON.stringify(msg, (k, v) => (typeof v === 'bigint' ? `${v}n` : v))}`);
  }
});

test('decode reads what encode writes, skips unknown fields and refuses malformed input', () => {
  const msg = { account: 'acct-K', balance: -(1n << 63n), exec: (1n << 63n) - 1n, replayed: true, budget_ms: 250n };
  assert.deepEqual(bank.decode('AccountReply', bank.encode('AccountReply', msg)), msg);
  // field 9 (varint) and field 10 (bytes), unknown: skipped.
  assert.deepEqual(bank.decode('EchoReply', Buffer.from('48050a01615201ff', 'hex')), { payload: Buffer.from('a') });
  // work_ms, GetRequest's field 3 and DebitRequest's field 4.
  assert.deepEqual(bank.decode('DebitRequest', Buffer.from('0a0161100a20ac02', 'hex')),
    { account: 'a', amount: 10n, sleep_ms: 0n, work_ms: 300n });
  assert.deepEqual(bank.decode('GetRequest', Buffer.from('0a0161100518ac02', 'hex')),
    { account: 'a', sleep_ms: 5n, work_ms: 300n });
  assert.deepEqual(bank.decode('AccountReply', Buffer.alloc(0)),
    { account: '', balance: 0n, exec: 0n, replayed: false, budget_ms: 0n });
  for (const hex of ['0a05ab', '10', '0801', '10ffffffffffffffffffff01']) {
    assert.throws(() => bank.decode('AccountReply', Buffer.from(hex, 'hex')), /^Error: bank: /, hex);
  }
});

test('fromJSON reads proto3 JSON as protojson does, and names the field it refuses', () => {
  assert.deepEqual(bank.fromJSON('DebitRequest', { account: 'a', amount: '10', sleepMs: 5 }),
    { account: 'a', amount: 10n, sleep_ms: 5n });
  assert.deepEqual(bank.fromJSON('GetRequest', { sleep_ms: '-3', account: null }), { sleep_ms: -3n, account: '' });
  assert.deepEqual(bank.fromJSON('EchoRequest', { payload: 'AP8=' }), { payload: Buffer.from([0, 255]) });
  assert.deepEqual(bank.fromJSON('EchoRequest', { payload: 'AP8' }), { payload: Buffer.from([0, 255]) });
  assert.deepEqual(bank.fromJSON('EchoRequest', { payload: '_-8' }), { payload: Buffer.from([0xff, 0xef]) });
  const bad = [
    ['DebitRequest', { amount: 'ten' }, 'amount'],
    ['DebitRequest', { amount: 1.5 }, 'amount'],
    ['DebitRequest', { amount: '9223372036854775808' }, 'overflows int64'],
    ['DebitRequest', { account: 7 }, 'account'],
    ['DebitRequest', { cents: 1 }, 'unknown field "cents"'],
    ['GetRequest', { sleepMs: '1', sleep_ms: '2' }, 'sleep_ms given twice'],
    ['EchoRequest', { payload: 'a$' }, 'payload'],
    ['EchoRequest', [], 'not a JSON object'],
  ];
  for (const [type, obj, text] of bad) {
    assert.throws(() => bank.fromJSON(type, obj), err => err.message.includes(text), JSON.stringify(obj));
  }
});

test('toJSON writes every field, int64 as strings, bytes as standard base64', () => {
  assert.deepEqual(bank.toJSON('AccountReply', { account: 'a', balance: -5n }),
    { account: 'a', balance: '-5', exec: '0', replayed: false, budgetMs: '0' });
  assert.deepEqual(bank.toJSON('EchoReply', { payload: Buffer.from([0xfb, 0xff]) }), { payload: '+/8=' });
});
