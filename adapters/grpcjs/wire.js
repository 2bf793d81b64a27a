'use strict';
// The client-under-test protocol's messages and framing
// (adapters/PROTOCOL.md, rpcbench-adapter/1): reading the harness's
// lines, holding each message to exactly its fields, writing whole
// lines.

const PROTOCOL = 'rpcbench-adapter/1';
const MAX_LINE = 1 << 20; // bytes, without the newline

/** The call_error kinds. */
const kind = {
  config: 'config',
  unsupported: 'unsupported',
  badRequest: 'bad_request',
  duplicateID: 'duplicate_id',
  protocol: 'protocol',
};

/** ProtocolError is a harness message that breaks its fields. */
class ProtocolError extends Error {}

function typeName(v) {
  if (v === null) {
    return 'null';
  }
  if (Array.isArray(v)) {
    return 'array';
  }
  return typeof v;
}

function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

// Field checks: each returns the value or throws ProtocolError.
const check = {
  string: (name, v) => {
    if (typeof v !== 'string') {
      throw new ProtocolError(`"${name}" is ${typeName(v)}, want string`);
    }
    return v;
  },
  bool: (name, v) => {
    if (typeof v !== 'boolean') {
      throw new ProtocolError(`"${name}" is ${typeName(v)}, want bool`);
    }
    return v;
  },
  integer: (name, v) => {
    if (!Number.isSafeInteger(v)) {
      throw new ProtocolError(`"${name}" is ${JSON.stringify(v)}, want an integer`);
    }
    return v;
  },
  object: (name, v) => {
    if (!isObject(v)) {
      throw new ProtocolError(`"${name}" is ${typeName(v)}, want object`);
    }
    return v;
  },
  stringMap: (name, v) => {
    check.object(name, v);
    for (const [k, s] of Object.entries(v)) {
      if (typeof s !== 'string') {
        throw new ProtocolError(`"${name}" has ${JSON.stringify(k)}: ${typeName(s)}, want string`);
      }
    }
    return v;
  },
};

/**
 * fields holds obj to exactly the fields named: required ones must be
 * present and not null, optional ones may be absent or null (meaning
 * absent), and any other but "type" is an error. Each maps to its check.
 * It returns the checked values, optional absent ones left out.
 */
function fields(obj, required, optional = {}) {
  for (const k of Object.keys(obj).sort()) {
    if (k !== 'type' && !(k in required) && !(k in optional)) {
      throw new ProtocolError(`unknown field "${k}"`);
    }
  }
  const out = {};
  for (const [k, chk] of Object.entries(required)) {
    if (!(k in obj) || obj[k] === null) {
      throw new ProtocolError(`no "${k}"`);
    }
    out[k] = chk(k, obj[k]);
  }
  for (const [k, chk] of Object.entries(optional)) {
    if (k in obj && obj[k] !== null) {
      out[k] = chk(k, obj[k]);
    }
  }
  return out;
}

function keepalive(name, v) {
  return fields(check.object(name, v),
    { time_ms: check.integer, timeout_ms: check.integer, permit_without_stream: check.bool });
}

function channel(name, v) {
  return fields(check.object(name, v), { id: check.string, target: check.string },
    { service_config: check.object, keepalive });
}

/**
 * decodeCall returns the call in obj, whose id has been checked, or
 * throws ProtocolError saying what breaks it.
 */
function decodeCall(obj) {
  const c = fields(obj, {
    id: check.integer, channel, method: check.string, request: check.object,
    deadline_ms: check.integer, metadata: check.stringMap, wait_for_ready: check.bool,
  });
  if (c.deadline_ms < 1) {
    throw new ProtocolError(`deadline_ms ${c.deadline_ms} < 1`);
  }
  return c;
}

/** decodeInit returns the init in obj, or throws ProtocolError. */
function decodeInit(obj) {
  return fields(obj, { protocol: check.string }, { scenario: check.string });
}

/** decodeShutdown checks that obj is a bare shutdown. */
function decodeShutdown(obj) {
  fields(obj, {});
}

/**
 * lines yields the lines of stream, without their "\n", as Buffers. A
 * line over MAX_LINE bytes throws as soon as that many bytes are held,
 * before the rest of it is read. A last line without "\n" is yielded.
 */
async function* lines(stream) {
  let held = [];
  let heldLen = 0;
  for await (const chunk of stream) {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl < 0 ? chunk.length : nl;
      if (heldLen + end - start > MAX_LINE) {
        throw new ProtocolError(`a line is longer than ${MAX_LINE} bytes`);
      }
      if (nl < 0) {
        if (end > start) {
          held.push(chunk.subarray(start));
          heldLen += end - start;
        }
        break;
      }
      held.push(chunk.subarray(start, nl));
      yield Buffer.concat(held);
      held = [];
      heldLen = 0;
      start = nl + 1;
    }
  }
  if (heldLen > 0) {
    yield Buffer.concat(held);
  }
}

/**
 * lineWriter writes messages as whole JSON lines to a stream, one write
 * each, so that the answers of concurrent calls never interleave.
 */
class lineWriter {
  constructor(stream) {
    this.stream = stream;
  }

  send(msg) {
    this.stream.write(JSON.stringify(msg) + '\n');
  }

  /** flushed resolves once everything sent so far is written. */
  flushed() {
    return new Promise(resolve => this.stream.write('', () => resolve()));
  }
}

module.exports = {
  PROTOCOL, MAX_LINE, kind, ProtocolError, isObject, check, fields,
  decodeCall, decodeInit, decodeShutdown, lines, lineWriter,
};
