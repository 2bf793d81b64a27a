'use strict';
// The Bank service's messages (proto/rpcbench/bank/v1/bank.proto), by
// hand: their protobuf wire encoding and their proto3 JSON mapping. The
// five messages have only string, int64, bool and bytes fields, so a
// table per message is the whole schema; no generated code, no
// protobuf library.
//
// In memory a message is a plain object keyed by the field's proto name:
// strings are strings, int64 fields are BigInt, bools are booleans,
// bytes are Buffers. Absent means the default value.

const FIELD_STRING = 'string';
const FIELD_INT64 = 'int64';
const FIELD_BOOL = 'bool';
const FIELD_BYTES = 'bytes';

// Wire types (protobuf encoding).
const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
const UINT64_MOD = 1n << 64n;

function field(num, name, json, type) {
  return { num, name, json, type };
}

/** The messages by their proto name, each a list of its fields. */
const messages = {
  GetRequest: [
    field(1, 'account', 'account', FIELD_STRING),
    field(2, 'sleep_ms', 'sleepMs', FIELD_INT64),
    field(3, 'work_ms', 'workMs', FIELD_INT64),
  ],
  DebitRequest: [
    field(1, 'account', 'account', FIELD_STRING),
    field(2, 'amount', 'amount', FIELD_INT64),
    field(3, 'sleep_ms', 'sleepMs', FIELD_INT64),
    field(4, 'work_ms', 'workMs', FIELD_INT64),
  ],
  EchoRequest: [field(1, 'payload', 'payload', FIELD_BYTES)],
  AccountReply: [
    field(1, 'account', 'account', FIELD_STRING),
    field(2, 'balance', 'balance', FIELD_INT64),
    field(3, 'exec', 'exec', FIELD_INT64),
    field(4, 'replayed', 'replayed', FIELD_BOOL),
    field(5, 'budget_ms', 'budgetMs', FIELD_INT64),
  ],
  EchoReply: [field(1, 'payload', 'payload', FIELD_BYTES)],
};

/** The Bank methods by the protocol's name: their request and response messages. */
const methods = {
  'rpcbench.bank.v1.Bank/Get': { request: 'GetRequest', response: 'AccountReply' },
  'rpcbench.bank.v1.Bank/Debit': { request: 'DebitRequest', response: 'AccountReply' },
  'rpcbench.bank.v1.Bank/Echo': { request: 'EchoRequest', response: 'EchoReply' },
};

function schemaOf(type) {
  const s = messages[type];
  if (!s) {
    throw new Error(`bank: no message ${type}`);
  }
  return s;
}

function isDefault(f, v) {
  switch (f.type) {
    case FIELD_STRING:
      return v === '';
    case FIELD_INT64:
      return v === 0n;
    case FIELD_BOOL:
      return v === false;
    case FIELD_BYTES:
      return v.length === 0;
  }
  return false;
}

function defaultOf(f) {
  switch (f.type) {
    case FIELD_STRING:
      return '';
    case FIELD_INT64:
      return 0n;
    case FIELD_BOOL:
      return false;
    case FIELD_BYTES:
      return Buffer.alloc(0);
  }
  return undefined;
}

function pushVarint(out, v) {
  // v is a BigInt in [0, 2^64).
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
}

/**
 * encode returns msg, a message of type, in the protobuf wire format.
 * Fields at their default value are left out, as proto3 does.
 */
function encode(type, msg) {
  const out = [];
  for (const f of schemaOf(type)) {
    const v = msg[f.name];
    if (v === undefined || isDefault(f, v)) {
      continue;
    }
    switch (f.type) {
      case FIELD_INT64:
        pushVarint(out, BigInt(f.num << 3 | WIRE_VARINT));
        pushVarint(out, v < 0n ? v + UINT64_MOD : v);
        break;
      case FIELD_BOOL:
        pushVarint(out, BigInt(f.num << 3 | WIRE_VARINT));
        out.push(1);
        break;
      case FIELD_STRING:
      case FIELD_BYTES: {
        const b = f.type === FIELD_STRING ? Buffer.from(v, 'utf8') : v;
        pushVarint(out, BigInt(f.num << 3 | WIRE_LEN));
        pushVarint(out, BigInt(b.length));
        for (const byte of b) {
          out.push(byte);
        }
        break;
      }
    }
  }
  return Buffer.from(out);
}

/** reader walks a buffer of protobuf wire format. */
class reader {
  constructor(buf) {
    this.buf = buf;
    this.pos = 0;
  }

  varint() {
    let v = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (this.pos >= this.buf.length) {
        throw new Error('bank: truncated varint');
      }
      const b = this.buf[this.pos++];
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) {
        if (v >= UINT64_MOD) {
          throw new Error('bank: varint overflows 64 bits');
        }
        return v;
      }
    }
    throw new Error('bank: varint longer than 10 bytes');
  }

  bytes(n) {
    if (n > BigInt(this.buf.length - this.pos)) {
      throw new Error('bank: length-delimited field runs past the message');
    }
    const b = this.buf.subarray(this.pos, this.pos + Number(n));
    this.pos += Number(n);
    return b;
  }

  skip(wire) {
    switch (wire) {
      case WIRE_VARINT:
        this.varint();
        return;
      case WIRE_I64:
        this.bytes(8n);
        return;
      case WIRE_LEN:
        this.bytes(this.varint());
        return;
      case WIRE_I32:
        this.bytes(4n);
        return;
    }
    throw new Error(`bank: wire type ${wire} not supported`);
  }
}

/**
 * decode returns the message of type in buf, every field present (at its
 * default when buf lacks it). Unknown fields are skipped, as proto3 does;
 * a field of a known number with the wrong wire type, or a malformed
 * buffer, is an error.
 */
function decode(type, buf) {
  const schema = schemaOf(type);
  const msg = {};
  for (const f of schema) {
    msg[f.name] = defaultOf(f);
  }
  const r = new reader(buf);
  while (r.pos < buf.length) {
    const tag = r.varint();
    const num = Number(tag >> 3n);
    const wire = Number(tag & 7n);
    if (num === 0) {
      throw new Error('bank: field number 0');
    }
    const f = schema.find(x => x.num === num);
    if (!f) {
      r.skip(wire);
      continue;
    }
    const want = f.type === FIELD_STRING || f.type === FIELD_BYTES ? WIRE_LEN : WIRE_VARINT;
    if (wire !== want) {
      throw new Error(`bank: ${type}.${f.name} has wire type ${wire}, want ${want}`);
    }
    switch (f.type) {
      case FIELD_INT64: {
        const v = r.varint();
        msg[f.name] = v > INT64_MAX ? v - UINT64_MOD : v;
        break;
      }
      case FIELD_BOOL:
        msg[f.name] = r.varint() !== 0n;
        break;
      case FIELD_STRING:
        msg[f.name] = r.bytes(r.varint()).toString('utf8');
        break;
      case FIELD_BYTES:
        msg[f.name] = Buffer.from(r.bytes(r.varint()));
        break;
    }
  }
  return msg;
}

const BASE64 = /^(?:[A-Za-z0-9+/]*|[A-Za-z0-9_-]*)={0,2}$/;

function int64FromJSON(name, v) {
  let n;
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) {
      throw new Error(`${name}: ${v} is not an integer exactly representable here; send int64 values as strings`);
    }
    n = BigInt(v);
  } else if (typeof v === 'string' && /^-?[0-9]+$/.test(v)) {
    n = BigInt(v);
  } else {
    throw new Error(`${name}: invalid value ${JSON.stringify(v)} for int64`);
  }
  if (n < INT64_MIN || n > INT64_MAX) {
    throw new Error(`${name}: ${v} overflows int64`);
  }
  return n;
}

/**
 * fromJSON returns the message of type that obj, its proto3 JSON form,
 * holds. Either a field's JSON name or its proto name is accepted, once;
 * int64 as a string or a safe integer; bytes as base64 (standard or
 * URL-safe, padding optional); null as the default. An unknown field or
 * a value of the wrong type is an error whose text names the field.
 */
function fromJSON(type, obj) {
  const schema = schemaOf(type);
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    throw new Error(`${type} is not a JSON object`);
  }
  const msg = {};
  for (const [key, v] of Object.entries(obj)) {
    const f = schema.find(x => x.json === key || x.name === key);
    if (!f) {
      throw new Error(`unknown field "${key}" in ${type}`);
    }
    if (f.name in msg) {
      throw new Error(`field ${f.name} given twice in ${type}`);
    }
    if (v === null) {
      msg[f.name] = defaultOf(f);
      continue;
    }
    switch (f.type) {
      case FIELD_STRING:
        if (typeof v !== 'string') {
          throw new Error(`${key}: invalid value ${JSON.stringify(v)} for string`);
        }
        msg[f.name] = v;
        break;
      case FIELD_INT64:
        msg[f.name] = int64FromJSON(key, v);
        break;
      case FIELD_BOOL:
        if (typeof v !== 'boolean') {
          throw new Error(`${key}: invalid value ${JSON.stringify(v)} for bool`);
        }
        msg[f.name] = v;
        break;
      case FIELD_BYTES:
        if (typeof v !== 'string' || !BASE64.test(v) || v.replace(/=+$/, '').length % 4 === 1) {
          throw new Error(`${key}: invalid value ${JSON.stringify(v)} for bytes`);
        }
        msg[f.name] = Buffer.from(v, v.includes('-') || v.includes('_') ? 'base64url' : 'base64');
        break;
    }
  }
  return msg;
}

/**
 * toJSON returns msg, a message of type, in proto3 JSON with every field
 * present (as grpc-go's adapter marshals with EmitUnpopulated): JSON
 * names, int64 as decimal strings, bytes as padded standard base64.
 */
function toJSON(type, msg) {
  const out = {};
  for (const f of schemaOf(type)) {
    const v = msg[f.name] ?? defaultOf(f);
    switch (f.type) {
      case FIELD_INT64:
        out[f.json] = v.toString();
        break;
      case FIELD_BYTES:
        out[f.json] = v.toString('base64');
        break;
      default:
        out[f.json] = v;
    }
  }
  return out;
}

/**
 * service is the Bank service as grpc-js's Server.addService takes it:
 * each method by its short name (Get, Debit, Echo), unary, with encode
 * and decode as its serializers in both directions.
 */
const service = Object.fromEntries(Object.entries(methods).map(([full, m]) => [
  full.slice(full.indexOf('/') + 1),
  {
    path: '/' + full, requestStream: false, responseStream: false,
    requestSerialize: msg => encode(m.request, msg), requestDeserialize: buf => decode(m.request, buf),
    responseSerialize: msg => encode(m.response, msg), responseDeserialize: buf => decode(m.response, buf),
  },
]));

module.exports = { messages, methods, service, encode, decode, fromJSON, toJSON };
