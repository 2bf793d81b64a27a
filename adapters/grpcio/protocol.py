"""The line checks both of the grpcio adapter's modes share: a harness
line's limit and its fields held to the names and JSON types the
protocol gives them (adapters/PROTOCOL.md, adapters/SERVER-PROTOCOL.md).
It imports neither mode: adapter.py and serve.py import it."""

MAX_LINE = 1 << 20


class ProtocolError(Exception):
    """A harness message that breaks its fields."""


def _type_name(v):
    if v is None:
        return "null"
    return {bool: "bool", int: "integer", float: "number", str: "string", list: "array", dict: "object"}.get(type(v), "?")


def want(kind):
    """want is a check, for fields, that a value is of the JSON type kind
    (string, bool, integer or object)."""
    def check(name, v):
        ok = {
            "string": isinstance(v, str),
            "bool": isinstance(v, bool),
            "integer": isinstance(v, int) and not isinstance(v, bool),
            "object": isinstance(v, dict),
        }[kind]
        if not ok:
            raise ProtocolError(f'"{name}" is {_type_name(v)}, want {kind}')
        return v
    return check


def string_map(name, v):
    """string_map checks, for fields, that v is an object of strings."""
    want("object")(name, v)
    for k, s in v.items():
        if not isinstance(s, str):
            raise ProtocolError(f'"{name}" has {k!r}: {_type_name(s)}, want string')
    return v


def fields(obj, required, optional=None):
    """fields holds obj to exactly the fields named (besides "type"):
    required ones present and not null, optional ones absent or null
    (absent); it returns the checked values."""
    optional = optional or {}
    for k in sorted(obj):
        if k != "type" and k not in required and k not in optional:
            raise ProtocolError(f'unknown field "{k}"')
    out = {}
    for k, chk in required.items():
        if obj.get(k) is None:
            raise ProtocolError(f'no "{k}"')
        out[k] = chk(k, obj[k])
    for k, chk in optional.items():
        if obj.get(k) is not None:
            out[k] = chk(k, obj[k])
    return out
