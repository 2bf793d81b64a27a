'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { serverNeedsStart } = require('../compat');

test('serverNeedsStart: grpc-js before 1.10 serves only after start()', () => {
  for (const [version, want] of [['1.8.22', true], ['1.9.15', true], ['1.10.0', false], ['1.10.11', false],
    ['1.14.7', false], ['2.0.0', false], ['0.9.1', true]]) {
    assert.equal(serverNeedsStart(version), want, version);
  }
});
