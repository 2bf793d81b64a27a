package scenario

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// A pgRelay sits, in this process, between an rpcserver and PostgreSQL,
// to lose a COMMIT as a network would, which no rpcserver switch can: it
// relays the PostgreSQL protocol unchanged until armed, then cuts the
// connection that sends the next COMMIT, either before PostgreSQL reads
// it (the transaction rolls back) or after PostgreSQL answered it (the
// transaction committed). Either way the rpcserver's COMMIT fails without
// saying whether it took effect. It reads the frontend and backend
// messages' framing (a type byte and a length) and the text of a simple
// query, nothing more; it needs the rpcserver's connections unencrypted.
type pgRelay struct {
	*relayBase
	network, address string // PostgreSQL's, as the DSN names it

	mu   sync.Mutex    // guards next and cut
	next CommitCut     // what to do with the next COMMIT
	cut  chan struct{} // closed once next is done
}

// CommitCut is what a pgRelay does with a COMMIT.
type CommitCut uint8

const (
	// cutNone relays the COMMIT.
	cutNone CommitCut = iota
	// CutBeforeCommit closes the connection instead of relaying the
	// COMMIT: PostgreSQL rolls the transaction back.
	CutBeforeCommit
	// CutCommitAnswer relays the COMMIT, drops PostgreSQL's answer up to
	// its ReadyForQuery, then closes the connection: the transaction
	// committed.
	CutCommitAnswer
)

// maxPGMessage bounds one relayed message; the rpcserver's are far
// smaller.
const maxPGMessage = 1 << 24

// StartPGRelay starts a relay to the PostgreSQL server of dsn and returns
// it with a DSN for the same database through the relay.
func (t *T) StartPGRelay(dsn string) (*pgRelay, string) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("pg relay: %v", err)
	}
	r := &pgRelay{network: "tcp", address: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))}
	if strings.HasPrefix(cfg.Host, "/") {
		r.network, r.address = "unix", filepath.Join(cfg.Host, fmt.Sprintf(".s.PGSQL.%d", cfg.Port))
	}
	r.relayBase = t.listenRelay(r.address)
	u := url.URL{Scheme: "postgres", User: url.User(cfg.User), Host: r.Addr(), Path: "/" + cfg.Database, RawQuery: "sslmode=disable"}
	if cfg.Password != "" {
		u.User = url.UserPassword(cfg.User, cfg.Password)
	}
	r.start(r.serve)
	return r, u.String()
}

// Arm makes the relay cut the next COMMIT any connection sends, as how
// says, and returns a channel closed once it has.
func (r *pgRelay) Arm(how CommitCut) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next, r.cut = how, make(chan struct{})
	return r.cut
}

// take returns what to do with a COMMIT and the channel to close once it
// is done, disarming the relay.
func (r *pgRelay) take() (CommitCut, chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	how, cut := r.next, r.cut
	r.next, r.cut = cutNone, nil
	return how, cut
}

func (r *pgRelay) serve(nc net.Conn) {
	up, err := net.Dial(r.network, r.address)
	if err != nil {
		nc.Close()
		return
	}
	r.track(up)
	var once sync.Once
	stop := func() { once.Do(func() { nc.Close(); up.Close() }) }
	// Set once this connection's COMMIT went through to be cut: what
	// PostgreSQL answers is dropped, up to its ReadyForQuery, and then
	// swallowed is closed.
	var (
		swallow   atomic.Bool
		swallowed chan struct{}
	)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer stop()
		br := bufio.NewReader(up)
		for {
			msg, err := readPGMessage(br, true)
			if err != nil {
				return
			}
			if swallow.Load() {
				if msg[0] == 'Z' {
					close(swallowed)
					return
				}
				continue
			}
			if _, err := nc.Write(msg); err != nil {
				return
			}
		}
	})
	defer wg.Wait()
	defer stop()
	br := bufio.NewReader(nc)
	// The first message, a startup or cancel request, has no type byte.
	for typed := false; ; typed = true {
		msg, err := readPGMessage(br, typed)
		if err != nil {
			return
		}
		if typed && isCommit(msg) {
			switch how, cut := r.take(); how {
			case CutBeforeCommit:
				close(cut)
				return
			case CutCommitAnswer:
				swallowed = cut
				swallow.Store(true)
			}
		}
		if _, err := up.Write(msg); err != nil {
			return
		}
	}
}

// readPGMessage reads one protocol message whole: a type byte, when
// typed, then a big-endian length that counts itself and the body.
func readPGMessage(br *bufio.Reader, typed bool) ([]byte, error) {
	head := 4
	if typed {
		head = 5
	}
	msg := make([]byte, head, 64)
	if _, err := io.ReadFull(br, msg); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(msg[head-4:])
	if n < 4 || n > maxPGMessage {
		return nil, fmt.Errorf("pg relay: message length %d outside [4,%d]", n, maxPGMessage)
	}
	msg = append(msg, make([]byte, n-4)...)
	_, err := io.ReadFull(br, msg[head:])
	return msg, err
}

// isCommit reports whether msg is a simple query ('Q') of COMMIT, as
// pgx sends a transaction's commit.
func isCommit(msg []byte) bool {
	if msg[0] != 'Q' {
		return false
	}
	q := strings.TrimRight(string(msg[5:]), "\x00")
	return strings.EqualFold(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(q), ";")), "commit")
}
