"""The rpcbench.bank.v1 messages (proto/rpcbench/bank/v1/bank.proto),
encoded and decoded by hand in the protobuf wire format, and read from
and written to the proto3 JSON mapping. Hand-written because the
messages are five, all scalar, and a generated module would tie the
adapter to one protoc and python3-protobuf pairing."""

import base64

# Each message: field name -> (number, kind), kind one of string, int64,
# bool, bytes. The JSON names are the lowerCamelCase of the field names.
MESSAGES = {
    "GetRequest": {"account": (1, "string"), "sleep_ms": (2, "int64"), "work_ms": (3, "int64")},
    "DebitRequest": {"account": (1, "string"), "amount": (2, "int64"), "sleep_ms": (3, "int64"),
                     "work_ms": (4, "int64")},
    "EchoRequest": {"payload": (1, "bytes")},
    "AccountReply": {"account": (1, "string"), "balance": (2, "int64"), "exec": (3, "int64"),
                     "replayed": (4, "bool"), "budget_ms": (5, "int64")},
    "EchoReply": {"payload": (1, "bytes")},
}

# The Bank methods: full name -> (request message, response message).
METHODS = {
    "rpcbench.bank.v1.Bank/Get": ("GetRequest", "AccountReply"),
    "rpcbench.bank.v1.Bank/Debit": ("DebitRequest", "AccountReply"),
    "rpcbench.bank.v1.Bank/Echo": ("EchoRequest", "EchoReply"),
}

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def json_name(field):
    head, *rest = field.split("_")
    return head + "".join(p.capitalize() for p in rest)


def _varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode(message, values):
    """encode returns values, a dict of field name -> Python value, as
    the message's wire bytes; fields at their default are left out."""
    out = bytearray()
    for name, (num, kind) in sorted(MESSAGES[message].items(), key=lambda kv: kv[1][0]):
        v = values.get(name)
        if not v:
            continue
        if kind in ("int64", "bool"):
            out += _varint(num << 3) + _varint(int(v))
        else:
            b = v.encode("utf-8") if kind == "string" else bytes(v)
            out += _varint(num << 3 | 2) + _varint(len(b)) + b
    return bytes(out)


def _read_varint(b, i):
    n = shift = 0
    while True:
        if i >= len(b) or shift > 63:
            raise ValueError("truncated or overlong varint")
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return n, i


# The wire type each kind is encoded with.
WIRE_TYPES = {"int64": 0, "bool": 0, "string": 2, "bytes": 2}


def decode(message, b):
    """decode returns the message's fields in b as a dict, each field at
    its default when absent, the last occurrence of a field winning.
    Unknown fields, and known ones with another wire type, are skipped,
    as protobuf does; malformed bytes raise ValueError. The server mode
    decodes requests from any client with it, so nothing in b is
    trusted."""
    by_num = {num: (name, kind) for name, (num, kind) in MESSAGES[message].items()}
    out = {name: _default(kind) for name, (num, kind) in MESSAGES[message].items()}
    i = 0
    while i < len(b):
        key, i = _read_varint(b, i)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise ValueError("field number 0")
        if wt == 0:
            v, i = _read_varint(b, i)
        elif wt == 2:
            n, i = _read_varint(b, i)
            if i + n > len(b):
                raise ValueError("truncated length-delimited field")
            v, i = b[i:i + n], i + n
        elif wt in (1, 5):
            n = 8 if wt == 1 else 4
            if i + n > len(b):
                raise ValueError("truncated fixed-width field")
            v, i = b[i:i + n], i + n
        else:
            raise ValueError(f"wire type {wt}")
        if num not in by_num or WIRE_TYPES[by_num[num][1]] != wt:
            continue
        name, kind = by_num[num]
        if kind == "int64":
            v &= (1 << 64) - 1  # a tenth varint byte may carry bits past 64; protobuf drops them
            out[name] = v - (1 << 64) if v >= 1 << 63 else v
        elif kind == "bool":
            out[name] = v != 0
        elif kind == "string":
            out[name] = bytes(v).decode("utf-8")
        else:
            out[name] = bytes(v)
    return out


def _default(kind):
    return {"string": "", "int64": 0, "bool": False, "bytes": b""}[kind]


def from_json(message, obj):
    """from_json reads obj, the message in the proto3 JSON mapping, into
    a dict of field values; it raises ValueError for what does not fit."""
    fields = MESSAGES[message]
    names = {}
    for name in fields:
        names[name] = name
        names[json_name(name)] = name
    out = {}
    for k, v in obj.items():
        if k not in names:
            raise ValueError(f"{message} has no field {k!r}")
        name = names[k]
        kind = fields[name][1]
        if v is None:
            continue
        if kind == "string":
            if not isinstance(v, str):
                raise ValueError(f"{k}: want a string")
            out[name] = v
        elif kind == "int64":
            if isinstance(v, bool) or not isinstance(v, (int, str)):
                raise ValueError(f"{k}: want an integer or a decimal string")
            try:
                n = int(v)
            except ValueError:
                raise ValueError(f"{k}: {v!r} is not an integer") from None
            if not INT64_MIN <= n <= INT64_MAX:
                raise ValueError(f"{k}: {v!r} is out of int64 range")
            out[name] = n
        elif kind == "bool":
            if not isinstance(v, bool):
                raise ValueError(f"{k}: want a bool")
            out[name] = v
        else:
            if not isinstance(v, str):
                raise ValueError(f"{k}: want base64 text")
            try:
                out[name] = base64.b64decode(v, validate=True)
            except ValueError:
                raise ValueError(f"{k}: not base64") from None
    return out


def to_json(message, values):
    """to_json returns values in the proto3 JSON mapping: lowerCamelCase
    names, int64 as decimal strings, bytes as base64, defaults left
    out."""
    out = {}
    for name, (num, kind) in MESSAGES[message].items():
        v = values.get(name)
        if not v:
            continue
        if kind == "int64":
            v = str(v)
        elif kind == "bytes":
            v = base64.b64encode(v).decode("ascii")
        out[json_name(name)] = v
    return out
