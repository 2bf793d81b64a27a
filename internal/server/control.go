package server

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// control answers a control request on c's reader, at once: Config.Control
// first, then the server's own control methods (SPEC.md). It returns the
// encoded answer.
func (s *Server) control(c *conn, f *proto.Frame) []byte {
	if s.cfg.Control != nil {
		if st, text, ok := s.cfg.Control(f.Method, f.Payload); ok {
			return respond(f, st, text)
		}
	}
	switch f.Method {
	case serverapi.MethodHello:
		role, ok := strings.CutPrefix(string(f.Payload), "role=")
		if !ok || role == "" || strings.ContainsAny(role, " \t\n") {
			return respond(f, proto.StatusInvalidArgument, `want payload "role=NAME"`)
		}
		s.log.Info(serverapi.EventConnRole, serverapi.KeyConn, c.id, serverapi.KeyRole, role)
		return respond(f, proto.StatusOK, "")
	case serverapi.MethodStats:
		return respond(f, proto.StatusOK, s.Counters().String())
	case serverapi.MethodFault:
		ft, err := ParseFault(string(f.Payload))
		if err == nil {
			err = s.AddFault(ft)
		}
		if err != nil {
			return respond(f, proto.StatusInvalidArgument, err.Error())
		}
		return respond(f, proto.StatusOK, ft.String())
	case serverapi.MethodClear:
		s.faults.Clear()
		s.log.Info(serverapi.EventFaultClear)
		return respond(f, proto.StatusOK, "")
	case serverapi.MethodCancel:
		id, err := cancelID(f.Payload)
		if err != nil {
			return respond(f, proto.StatusInvalidArgument, err.Error())
		}
		return respond(f, proto.StatusOK, "found="+strconv.FormatBool(s.queue.cancel(c, id)))
	case serverapi.MethodDrain:
		// Started once the answer is queued (see dispatch), so that the
		// answer goes out before this connection's drain frame.
		return respond(f, proto.StatusOK, "")
	}
	return respond(f, proto.StatusOK, "")
}

// cancelID decodes ctl.cancel's payload, "id=N" with N a request ID.
func cancelID(payload []byte) (uint64, error) {
	fs, err := serverapi.ParseFields(payload)
	if err != nil {
		return 0, err
	}
	v, ok := fs["id"]
	if !ok || len(fs) != 1 {
		return 0, fmt.Errorf("server: ctl.cancel payload %q, want \"id=N\"", payload)
	}
	id, err := strconv.ParseUint(v, 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("server: ctl.cancel id=%q is not a request ID", v)
	}
	return id, nil
}
