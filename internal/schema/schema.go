// Package schema finds a running gRPC service's methods and messages,
// from its .proto files, a FileDescriptorSet or the service's own server
// reflection, and turns a request written as JSON (as grpcurl takes it)
// into the request message's bytes, and an answer's bytes back into JSON
// or into one numeric field, which an observe oracle reads.
//
// It depends on no gRPC library: .proto files are parsed with
// bufbuild/protocompile, messages are google.golang.org/protobuf's
// dynamicpb, and reflection's own messages are encoded with protowire
// (reflect.go) and sent through rawgrpc.
package schema

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/rpcbench/rpcbench/internal/suggest"
)

// ErrUsage wraps the errors that are the user's input at fault: a file
// that does not parse, a method the schema does not have, a request that
// does not match its message, a field the answer has not. rpcbench exits
// 2 on them before anything is sent.
var ErrUsage = errors.New("schema")

func usagef(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, a...))
}

// Schema is the files that define a service's methods and messages.
type Schema struct {
	files *protoregistry.Files
	// Source says where the files came from, for evidence: "proto
	// bank.proto", "descriptor set FILE", "reflection grpc.reflection.v1
	// at ADDR".
	Source string
}

// register adds fd and, first, every file it imports, to files, once.
func register(files *protoregistry.Files, fd protoreflect.FileDescriptor) error {
	if _, err := files.FindFileByPath(fd.Path()); err == nil {
		return nil
	}
	imps := fd.Imports()
	for i := range imps.Len() {
		if err := register(files, imps.Get(i).FileDescriptor); err != nil {
			return err
		}
	}
	return files.RegisterFile(fd)
}

// FromProto parses the .proto files named, each found under one of
// importPaths (the working directory when there are none), with the
// files they import; google/protobuf's well-known files need not be
// given.
func FromProto(ctx context.Context, importPaths []string, names ...string) (*Schema, error) {
	if len(names) == 0 {
		return nil, usagef("no .proto file given")
	}
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: importPaths}),
	}
	compiled, err := c.Compile(ctx, names...)
	if err != nil {
		return nil, usagef("%v", err)
	}
	files := new(protoregistry.Files)
	for _, f := range compiled {
		if err := register(files, f); err != nil {
			return nil, usagef("%s: %v", f.Path(), err)
		}
	}
	return &Schema{files: files, Source: "proto " + strings.Join(names, ",")}, nil
}

// FromDescriptorSet reads a FileDescriptorSet (protoc
// --descriptor_set_out with --include_imports, buf build -o) from path.
func FromDescriptorSet(path string) (*Schema, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("%v", err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		return nil, usagef("%s is not a FileDescriptorSet: %v", path, err)
	}
	s, err := fromFileProtos(set.GetFile())
	if err != nil {
		return nil, usagef("%s: %v", path, err)
	}
	s.Source = "descriptor set " + path
	return s, nil
}

// fromFileProtos builds a schema from file descriptors in any order; a
// google/protobuf file none of them holds is taken from the ones
// compiled into rpcbench.
func fromFileProtos(fps []*descriptorpb.FileDescriptorProto) (*Schema, error) {
	byPath := map[string]*descriptorpb.FileDescriptorProto{}
	for _, fp := range fps {
		byPath[fp.GetName()] = fp
	}
	files := new(protoregistry.Files)
	var add func(name string, seen []string) error
	add = func(name string, seen []string) error {
		if _, err := files.FindFileByPath(name); err == nil {
			return nil
		}
		if slices.Contains(seen, name) {
			return fmt.Errorf("import cycle: %s", strings.Join(append(seen, name), " -> "))
		}
		fp, ok := byPath[name]
		if !ok {
			if fd, err := protoregistry.GlobalFiles.FindFileByPath(name); err == nil && strings.HasPrefix(name, "google/protobuf/") {
				return register(files, fd)
			}
			return fmt.Errorf("file %s is imported but not given", name)
		}
		for _, dep := range fp.GetDependency() {
			if err := add(dep, append(seen, name)); err != nil {
				return err
			}
		}
		fd, err := protodesc.NewFile(fp, files)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return files.RegisterFile(fd)
	}
	names := make([]string, 0, len(byPath))
	for n := range byPath {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := add(n, nil); err != nil {
			return nil, err
		}
	}
	return &Schema{files: files}, nil
}

// Method is one unary method of the schema.
type Method struct {
	Desc protoreflect.MethodDescriptor
	// Path is the HTTP/2 :path of its calls: "/pkg.Service/Method".
	Path string
}

// Name is the method's name as users write it: "pkg.Service/Method".
func (m Method) Name() string { return strings.TrimPrefix(m.Path, "/") }

// Idempotency is the method's idempotency_level option: "idempotent",
// "no_side_effects", or "" when the .proto says nothing (unknown, which
// a judge treats as not idempotent).
func (m Method) Idempotency() string {
	opts, _ := m.Desc.Options().(*descriptorpb.MethodOptions)
	switch opts.GetIdempotencyLevel() {
	case descriptorpb.MethodOptions_IDEMPOTENT:
		return "idempotent"
	case descriptorpb.MethodOptions_NO_SIDE_EFFECTS:
		return "no_side_effects"
	}
	return ""
}

// Methods lists every method of every service, "pkg.Service/Method",
// sorted.
func (s *Schema) Methods() []string {
	var out []string
	s.files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		svcs := fd.Services()
		for i := range svcs.Len() {
			ms := svcs.Get(i).Methods()
			for j := range ms.Len() {
				out = append(out, methodName(ms.Get(j)))
			}
		}
		return true
	})
	slices.Sort(out)
	return out
}

func methodName(md protoreflect.MethodDescriptor) string {
	return string(md.Parent().FullName()) + "/" + string(md.Name())
}

// Method finds name, "pkg.Service/Method" or "pkg.Service.Method" (a
// leading slash allowed), among the schema's unary methods. A name it
// has not is a usage error listing the nearest it has.
func (s *Schema) Method(name string) (Method, error) {
	full := strings.TrimPrefix(name, "/")
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		full = full[:i] + "." + full[i+1:]
	}
	d, err := s.files.FindDescriptorByName(protoreflect.FullName(full))
	md, ok := d.(protoreflect.MethodDescriptor)
	if err != nil || !ok {
		return Method{}, usagef("no method %q in %s; %s", name, s.Source, near(name, s.Methods()))
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return Method{}, usagef("method %s streams: only unary methods are judged", methodName(md))
	}
	return Method{Desc: md, Path: "/" + methodName(md)}, nil
}

// near says which of have are nearest name, or lists them all when
// there are few.
func near(name string, have []string) string {
	if len(have) == 0 {
		return "it has no methods"
	}
	last := func(s string) string { return strings.ToLower(s[strings.LastIndexAny(s, "./")+1:]) }
	if hits := suggest.Near(name, have, last); len(hits) > 0 {
		return "did you mean " + strings.Join(hits, ", ") + "?"
	}
	if len(have) <= 12 {
		return "it has " + strings.Join(have, ", ")
	}
	return fmt.Sprintf("it has %d methods, among them %s", len(have), strings.Join(have[:12], ", "))
}

// Request encodes a request written as JSON (protojson: field names as
// in the .proto or in lowerCamelCase) as m's input message. A key the
// message has not, or a value of the wrong type, is a usage error naming
// it.
func (m Method) Request(js string) ([]byte, error) {
	msg := dynamicpb.NewMessage(m.Desc.Input())
	if err := protojson.Unmarshal([]byte(js), msg); err != nil {
		return nil, usagef("request for %s is not a %s: %v", m.Name(), m.Desc.Input().FullName(), err)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		return nil, usagef("request for %s: %v", m.Name(), err)
	}
	return b, nil
}

// Answer decodes b, m's output message, as compact JSON.
func (m Method) Answer(b []byte) (string, error) {
	msg := dynamicpb.NewMessage(m.Desc.Output())
	if err := proto.Unmarshal(b, msg); err != nil {
		return "", fmt.Errorf("answer of %s is not a %s: %w", m.Name(), m.Desc.Output().FullName(), err)
	}
	js, err := protojson.MarshalOptions{EmitUnpopulated: false}.Marshal(msg)
	if err != nil {
		return "", err
	}
	return string(js), nil
}

// CheckField reports whether path, dotted field names ("balance",
// "account.balance"), names an integer field of m's output message, as
// Int reads it: a usage error otherwise.
func (m Method) CheckField(path string) error {
	_, err := fieldPath(m.Desc.Output(), path)
	return err
}

// Int reads the integer field at path of b, m's output message. An unset
// field is 0, as proto3 has it.
func (m Method) Int(b []byte, path string) (int64, error) {
	fds, err := fieldPath(m.Desc.Output(), path)
	if err != nil {
		return 0, err
	}
	msg := dynamicpb.NewMessage(m.Desc.Output())
	if err := proto.Unmarshal(b, msg); err != nil {
		return 0, fmt.Errorf("answer of %s is not a %s: %w", m.Name(), m.Desc.Output().FullName(), err)
	}
	var cur protoreflect.Message = msg
	for _, fd := range fds[:len(fds)-1] {
		cur = cur.Get(fd).Message()
	}
	last := fds[len(fds)-1]
	v := cur.Get(last)
	switch last.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return v.Int(), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		u := v.Uint()
		if u > math.MaxInt64 {
			return 0, fmt.Errorf("%s = %d is past what rpcbench counts", path, u)
		}
		return int64(u), nil
	case protoreflect.StringKind:
		n, err := strconv.ParseInt(v.String(), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s = %q is no integer", path, v.String())
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s is a %s", path, last.Kind())
}

// fieldPath resolves path in md: every name but the last a singular
// message field, the last a singular integer field (or a string one
// holding an integer).
func fieldPath(md protoreflect.MessageDescriptor, path string) ([]protoreflect.FieldDescriptor, error) {
	if path == "" {
		return nil, usagef("no field named")
	}
	var out []protoreflect.FieldDescriptor
	parts := strings.Split(path, ".")
	for i, p := range parts {
		fd := md.Fields().ByName(protoreflect.Name(p))
		if fd == nil {
			fd = md.Fields().ByJSONName(p)
		}
		if fd == nil {
			return nil, usagef("%s has no field %q (of %q); it has %s", md.FullName(), p, path, fieldNames(md))
		}
		if fd.IsList() || fd.IsMap() {
			return nil, usagef("field %q of %s is repeated: name a single value", p, md.FullName())
		}
		out = append(out, fd)
		if i < len(parts)-1 {
			if fd.Message() == nil {
				return nil, usagef("field %q of %s is no message: %q goes past it", p, md.FullName(), path)
			}
			md = fd.Message()
			continue
		}
		switch fd.Kind() {
		case protoreflect.MessageKind, protoreflect.GroupKind, protoreflect.BoolKind, protoreflect.EnumKind,
			protoreflect.BytesKind, protoreflect.FloatKind, protoreflect.DoubleKind:
			return nil, usagef("field %q of %s is a %s: an observe field counts, so it must be an integer", p, md.FullName(), fd.Kind())
		}
	}
	return out, nil
}

func fieldNames(md protoreflect.MessageDescriptor) string {
	fs := md.Fields()
	if fs.Len() == 0 {
		return "no fields"
	}
	names := make([]string, fs.Len())
	for i := range fs.Len() {
		names[i] = string(fs.Get(i).Name())
	}
	return strings.Join(names, ", ")
}
