'use strict';
// The server-under-test protocol's messages (adapters/SERVER-PROTOCOL.md,
// rpcbench-server/1): the harness's two messages held to exactly their
// fields, and the adapter's lines written whole. Framing and field
// checks are wire.js's, shared with the client protocol.

const { check, fields } = require('./wire');

const PROTOCOL = 'rpcbench-server/1';

/** decodeInit returns the init in obj, or throws wire.ProtocolError. */
function decodeInit(obj) {
  return fields(obj, { protocol: check.string }, { scenario: check.string });
}

/** decodeShutdown checks that obj is a bare shutdown. */
function decodeShutdown(obj) {
  fields(obj, {});
}

/**
 * line returns msg, a flat object of strings, numbers, booleans, nulls
 * and BigInts, as one JSON object's text. A BigInt is written as the
 * integer it is: JSON.stringify refuses BigInt, and a balance or amount
 * past 2^53 would lose digits as a Number.
 */
function line(msg) {
  const parts = Object.entries(msg).map(([k, v]) =>
    `${JSON.stringify(k)}:${typeof v === 'bigint' ? v.toString() : JSON.stringify(v)}`);
  return `{${parts.join(',')}}`;
}

/**
 * eventWriter writes messages as whole lines to a stream, one write
 * each; Node runs one handler at a time, so lines never interleave.
 */
class eventWriter {
  constructor(stream) {
    this.stream = stream;
  }

  send(msg) {
    this.stream.write(line(msg) + '\n');
  }

  /** flushed resolves once everything sent so far is written. */
  flushed() {
    return new Promise(resolve => this.stream.write('', () => resolve()));
  }
}

module.exports = { PROTOCOL, decodeInit, decodeShutdown, line, eventWriter };
