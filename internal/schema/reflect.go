package schema

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/net/http2"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/rpcbench/rpcbench/internal/grpcwire"
	"github.com/rpcbench/rpcbench/internal/rawgrpc"
)

// The server reflection services tried, newest first: grpc-go and
// grpc-java serve both, grpcio's and grpc-js's packages v1alpha only in
// their older releases.
var reflectionServices = []string{"grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"}

// Limits on what a reflecting server may send: a schema is descriptors,
// kilobytes each; a server past these is misbehaving, and its schema is
// an error naming the limit, before more is held.
const (
	maxReflectFiles = 1000
	maxReflectBytes = 16 << 20
)

// The fields of grpc.reflection.v1's ServerReflectionRequest and
// ServerReflectionResponse (reflection.proto) that rpcbench uses; v1alpha
// numbers them alike.
const (
	reqFileByFilename       = 3
	reqFileContainingSymbol = 4
	reqListServices         = 7

	respFileDescriptor = 4 // FileDescriptorResponse{repeated bytes file_descriptor_proto = 1}
	respListServices   = 6 // ListServiceResponse{repeated ServiceResponse service = 1}, ServiceResponse{string name = 1}
	respError          = 7 // ErrorResponse{int32 error_code = 1; string error_message = 2}
)

// ErrNoReflection is FromReflection's error when the server serves no
// reflection service: give its .proto files instead.
var ErrNoReflection = errors.New("schema: the server serves no gRPC server reflection (grpc.reflection.v1 or v1alpha)")

// reflector asks one server's reflection service, one request per
// stream.
type reflector struct {
	c       *rawgrpc.Conn
	path    string
	got     int // bytes received
	timeout string
}

// FromReflection asks the server at addr, over h2c, for its services and
// the files that define them, by grpc.reflection.v1, or v1alpha when v1
// is not served.
func FromReflection(ctx context.Context, addr string) (*Schema, error) {
	c, err := rawgrpc.DialOptions(ctx, addr, rawgrpc.Options{MaxBody: maxReflectBytes})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var r *reflector
	var services []string
	for _, svc := range reflectionServices {
		r = &reflector{c: c, path: "/" + svc + "/ServerReflectionInfo", timeout: "10S"}
		services, err = r.listServices(ctx)
		if !errors.Is(err, errUnimplemented) {
			break
		}
	}
	if errors.Is(err, errUnimplemented) {
		return nil, fmt.Errorf("%w at %s", ErrNoReflection, addr)
	}
	if err != nil {
		return nil, err
	}
	fps := map[string]*descriptorpb.FileDescriptorProto{}
	for _, svc := range services {
		if strings.HasPrefix(svc, "grpc.reflection.") {
			continue
		}
		if err := r.files(ctx, reqFileContainingSymbol, svc, fps); err != nil {
			return nil, err
		}
	}
	// Files imported but not sent along are asked for by name; the
	// well-known ones may stay missing (rpcbench has them).
	for {
		var missing []string
		for _, fp := range fps {
			for _, dep := range fp.GetDependency() {
				if _, ok := fps[dep]; !ok && !slices.Contains(missing, dep) && !strings.HasPrefix(dep, "google/protobuf/") {
					missing = append(missing, dep)
				}
			}
		}
		if len(missing) == 0 {
			break
		}
		slices.Sort(missing)
		for _, name := range missing {
			if err := r.files(ctx, reqFileByFilename, name, fps); err != nil {
				return nil, err
			}
			if _, ok := fps[name]; !ok {
				return nil, fmt.Errorf("schema: reflection at %s: asked for %s, imported by its files, and was not sent it", addr, name)
			}
		}
	}
	list := make([]*descriptorpb.FileDescriptorProto, 0, len(fps))
	for _, fp := range fps {
		list = append(list, fp)
	}
	s, err := fromFileProtos(list)
	if err != nil {
		return nil, fmt.Errorf("schema: reflection at %s: %w", addr, err)
	}
	s.Source = "reflection " + strings.TrimSuffix(strings.TrimPrefix(r.path, "/"), "/ServerReflectionInfo") + " at " + addr
	return s, nil
}

var errUnimplemented = errors.New("unimplemented")

// ask sends one request (field, value) and returns the response message.
func (r *reflector) ask(ctx context.Context, field protowire.Number, value string) ([]byte, error) {
	req := protowire.AppendTag(nil, field, protowire.BytesType)
	req = protowire.AppendString(req, value)
	st, err := r.c.Open(rawgrpc.Request{Path: r.path, Timeout: r.timeout, Message: req})
	if err != nil {
		return nil, fmt.Errorf("schema: reflection: %w", err)
	}
	res, err := st.Wait(ctx)
	if err != nil {
		st.Reset(http2.ErrCodeCancel)
		return nil, fmt.Errorf("schema: reflection: %w", err)
	}
	if res.HasCode && res.Code == grpcwire.Unimplemented {
		return nil, errUnimplemented
	}
	if res.BadBody != "" {
		return nil, fmt.Errorf("schema: reflection at %s: %s", r.path, res.BadBody)
	}
	if len(res.Messages) == 0 {
		return nil, fmt.Errorf("schema: reflection at %s answered %s with no message", r.path, res.Outcome())
	}
	r.got += len(res.Messages[0])
	if r.got > maxReflectBytes {
		return nil, fmt.Errorf("schema: reflection at %s sent over %d bytes of descriptors", r.path, maxReflectBytes)
	}
	return res.Messages[0], nil
}

// listServices asks for the services' names.
func (r *reflector) listServices(ctx context.Context) ([]string, error) {
	b, err := r.ask(ctx, reqListServices, "*")
	if err != nil {
		return nil, err
	}
	body, err := r.response(b, respListServices)
	if err != nil {
		return nil, err
	}
	var names []string
	err = eachField(body, func(n protowire.Number, v []byte) error {
		if n != 1 {
			return nil
		}
		return eachField(v, func(n protowire.Number, v []byte) error {
			if n == 1 {
				names = append(names, string(v))
			}
			return nil
		})
	})
	return names, err
}

// files asks for the files by (field, value) and adds those sent to fps.
func (r *reflector) files(ctx context.Context, field protowire.Number, value string, fps map[string]*descriptorpb.FileDescriptorProto) error {
	b, err := r.ask(ctx, field, value)
	if err != nil {
		return err
	}
	body, err := r.response(b, respFileDescriptor)
	if err != nil {
		return fmt.Errorf("%w (asking for %s)", err, value)
	}
	return eachField(body, func(n protowire.Number, v []byte) error {
		if n != 1 {
			return nil
		}
		fp := new(descriptorpb.FileDescriptorProto)
		if err := proto.Unmarshal(v, fp); err != nil {
			return fmt.Errorf("schema: reflection at %s sent a file descriptor that does not decode: %w", r.path, err)
		}
		if _, ok := fps[fp.GetName()]; !ok && len(fps) >= maxReflectFiles {
			return fmt.Errorf("schema: reflection at %s sent over %d files", r.path, maxReflectFiles)
		}
		fps[fp.GetName()] = fp
		return nil
	})
}

// response returns the body of the response's field want, or the
// error_response it holds instead.
func (r *reflector) response(b []byte, want protowire.Number) ([]byte, error) {
	var body []byte
	var found bool
	var code int64
	var msg string
	var isErr bool
	err := eachField(b, func(n protowire.Number, v []byte) error {
		switch n {
		case want:
			body, found = v, true
		case respError:
			isErr = true
			return eachField(v, func(n protowire.Number, v []byte) error {
				switch n {
				case 1:
					x, k := protowire.ConsumeVarint(v)
					if k < 0 {
						return protowire.ParseError(k)
					}
					code = int64(int32(x))
				case 2:
					msg = string(v)
				}
				return nil
			})
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("schema: reflection at %s: a response that does not decode: %w", r.path, err)
	case isErr:
		return nil, fmt.Errorf("schema: reflection at %s: error %d: %s", r.path, code, msg)
	case !found:
		return nil, fmt.Errorf("schema: reflection at %s: a response without the answer asked for (field %d)", r.path, want)
	}
	return body, nil
}

// eachField calls f with each field of the message b: its number and,
// for a varint, the varint's own bytes, for a length-delimited field its
// contents; other wire types are passed over.
func eachField(b []byte, f func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		n, t, k := protowire.ConsumeTag(b)
		if k < 0 {
			return protowire.ParseError(k)
		}
		b = b[k:]
		var v []byte
		switch t {
		case protowire.BytesType:
			v, k = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			_, k = protowire.ConsumeVarint(b)
			if k >= 0 {
				v = b[:k]
			}
		default:
			k = protowire.ConsumeFieldValue(n, t, b)
		}
		if k < 0 {
			return protowire.ParseError(k)
		}
		b = b[k:]
		if t == protowire.BytesType || t == protowire.VarintType {
			if err := f(n, v); err != nil {
				return err
			}
		}
	}
	return nil
}
