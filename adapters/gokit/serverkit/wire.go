package serverkit

// The protocol's version and limits (adapters/SERVER-PROTOCOL.md).
const (
	Protocol = "rpcbench-server/1"
	maxLine  = 1 << 20
)

type wireInit struct {
	Protocol string `json:"protocol"`
	Scenario string `json:"scenario"`
}

type wireServing struct {
	Type     string `json:"type"`
	Protocol string `json:"protocol"`
	Stack    string `json:"stack"`
	Version  string `json:"version"`
	Runtime  string `json:"runtime"`
	Addr     string `json:"addr"`
}

type wireStart struct {
	Type   string `json:"type"`
	Call   string `json:"call"`
	Method string `json:"method"`
	// DeadlineMS is nil when the library gave the handler no deadline.
	DeadlineMS *float64 `json:"deadline_ms"`
}

type wireExec struct {
	Type    string `json:"type"`
	Call    string `json:"call"`
	Method  string `json:"method"`
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
	Balance int64  `json:"balance"`
}

type wireEnd struct {
	Type     string `json:"type"`
	Call     string `json:"call"`
	Method   string `json:"method"`
	Executed bool   `json:"executed"`
	Ctx      string `json:"ctx"`
	Code     Code   `json:"code"`
}

type wireFatal struct {
	Type string `json:"type"`
	Text string `json:"text"`
}
