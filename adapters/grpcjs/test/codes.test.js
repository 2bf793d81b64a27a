'use strict';
// The status names the adapter reports, against grpc-js's own numbering.

const test = require('node:test');
const assert = require('node:assert/strict');
const grpc = require('@grpc/grpc-js');
const { codeNames, codeOf } = require('../codes');

test('codeOf names each of grpc-js\'s codes as PROTOCOL.md spells it', () => {
  // grpc.status is grpc-js's enum; its names are the canonical ones.
  const want = Object.entries(grpc.status).filter(([k]) => Number.isNaN(Number(k)));
  assert.equal(want.length, 17);
  for (const [name, num] of want) {
    assert.deepEqual(codeOf(num), { code: name, code_num: num });
  }
  assert.equal(codeNames.length, 17);
});

test('codeOf reports a code grpc-js passed through unchecked as it is', () => {
  assert.deepEqual(codeOf(17), { code: 'UNKNOWN_CODE_17', code_num: 17 });
  assert.deepEqual(codeOf(-1), { code: 'UNKNOWN_CODE_-1', code_num: -1 });
  assert.deepEqual(codeOf(NaN), { code: 'UNKNOWN_CODE_NaN', code_num: -1 });
});
