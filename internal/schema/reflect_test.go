package schema

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
)

// fakeReflection serves server reflection of the shop schema on h2c, as
// the services named in serve (full paths) answer it; with depsApart, a
// file's imports are not sent along, so that the client must ask for
// them by name.
type fakeReflection struct {
	files     map[string][]byte // by name, FileDescriptorProto bytes
	owner     map[string]string // symbol -> file
	serve     []string
	depsApart bool
	// errorFor answers an error_response to a request for that value.
	errorFor string
	asked    []string
}

func newFakeReflection(t *testing.T) *fakeReflection {
	s := shop(t)
	f := &fakeReflection{files: map[string][]byte{}, owner: map[string]string{"shop.v1.Orders": "shop/v1/shop.proto"},
		serve: []string{"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"}}
	for _, name := range []string{"shop/v1/shop.proto", "shop/v1/common.proto"} {
		fd, err := s.files.FindFileByPath(name)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := proto.Marshal(protodesc.ToFileDescriptorProto(fd))
		f.files[name] = b
	}
	return f
}

func (f *fakeReflection) start(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h2c.NewHandler(f, &http2.Server{})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func (f *fakeReflection) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/grpc")
	w.Header().Set("Trailer", "Grpc-Status")
	if !slices.Contains(f.serve, r.URL.Path) {
		w.Header().Set("Grpc-Status", "12")
		w.WriteHeader(200)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var field protowire.Number
	var value string
	eachField(body[5:], func(n protowire.Number, v []byte) error {
		field, value = n, string(v)
		return nil
	})
	f.asked = append(f.asked, value)
	var resp []byte
	switch {
	case value == f.errorFor:
		e := protowire.AppendTag(nil, 1, protowire.VarintType)
		e = protowire.AppendVarint(e, 5)
		e = protowire.AppendTag(e, 2, protowire.BytesType)
		e = protowire.AppendString(e, "not found: "+value)
		resp = protowire.AppendTag(resp, respError, protowire.BytesType)
		resp = protowire.AppendBytes(resp, e)
	case field == reqListServices:
		var l []byte
		for _, name := range []string{"grpc.reflection.v1.ServerReflection", "shop.v1.Orders"} {
			svc := protowire.AppendTag(nil, 1, protowire.BytesType)
			svc = protowire.AppendString(svc, name)
			l = protowire.AppendTag(l, 1, protowire.BytesType)
			l = protowire.AppendBytes(l, svc)
		}
		resp = protowire.AppendTag(resp, respListServices, protowire.BytesType)
		resp = protowire.AppendBytes(resp, l)
	default:
		name := value
		if field == reqFileContainingSymbol {
			name = f.owner[value]
		}
		names := []string{name}
		if !f.depsApart && name == "shop/v1/shop.proto" {
			names = append(names, "shop/v1/common.proto")
		}
		var fdr []byte
		for _, n := range names {
			fdr = protowire.AppendTag(fdr, 1, protowire.BytesType)
			fdr = protowire.AppendBytes(fdr, f.files[n])
		}
		resp = protowire.AppendTag(resp, respFileDescriptor, protowire.BytesType)
		resp = protowire.AppendBytes(resp, fdr)
	}
	msg := make([]byte, 5, 5+len(resp))
	binary.BigEndian.PutUint32(msg[1:], uint32(len(resp)))
	w.WriteHeader(200)
	w.Write(append(msg, resp...))
	w.Header().Set("Grpc-Status", "0")
}

func TestFromReflection(t *testing.T) {
	want := []string{"shop.v1.Orders/Place", "shop.v1.Orders/Stats", "shop.v1.Orders/Watch"}
	for _, c := range []struct {
		name  string
		setup func(f *fakeReflection)
		via   string
		asked []string
	}{
		{"v1", func(*fakeReflection) {}, "grpc.reflection.v1.ServerReflection", []string{"*", "shop.v1.Orders"}},
		{"v1alpha only", func(f *fakeReflection) {
			f.serve = []string{"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"}
		}, "grpc.reflection.v1alpha.ServerReflection", []string{"*", "shop.v1.Orders"}},
		{"imports asked for by name", func(f *fakeReflection) { f.depsApart = true },
			"grpc.reflection.v1.ServerReflection", []string{"*", "shop.v1.Orders", "shop/v1/common.proto"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeReflection(t)
			c.setup(f)
			addr := f.start(t)
			s, err := FromReflection(context.Background(), addr)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Methods(); !slices.Equal(got, want) {
				t.Errorf("Methods() = %q, want %q", got, want)
			}
			if s.Source != "reflection "+c.via+" at "+addr {
				t.Errorf("Source = %q, want it to name %s", s.Source, c.via)
			}
			if !slices.Equal(f.asked, c.asked) {
				t.Errorf("asked for %q, want %q", f.asked, c.asked)
			}
			if _, err := s.Method("shop.v1.Orders/Place"); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestFromReflectionErrors(t *testing.T) {
	f := newFakeReflection(t)
	f.serve = nil
	if _, err := FromReflection(context.Background(), f.start(t)); !errors.Is(err, ErrNoReflection) {
		t.Errorf("a server with no reflection: %v, want ErrNoReflection", err)
	}
	f = newFakeReflection(t)
	f.errorFor = "shop.v1.Orders"
	if _, err := FromReflection(context.Background(), f.start(t)); err == nil || !strings.Contains(err.Error(), "error 5: not found: shop.v1.Orders") {
		t.Errorf("an error_response: %v, want an error quoting it", err)
	}
	f = newFakeReflection(t)
	f.depsApart = true
	delete(f.files, "shop/v1/common.proto")
	if _, err := FromReflection(context.Background(), f.start(t)); err == nil || !strings.Contains(err.Error(), "common.proto") {
		t.Errorf("an import never sent: %v, want an error naming it", err)
	}
	// Not HTTP/2 at all: an error, no hang.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			c.Close()
		}
	}()
	if _, err := FromReflection(context.Background(), ln.Addr().String()); err == nil || errors.Is(err, ErrNoReflection) {
		t.Errorf("a server that is not HTTP/2: %v, want an error", err)
	}
}
