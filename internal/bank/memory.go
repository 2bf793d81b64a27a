package bank

import (
	"sync"
	"time"
)

// Memory is a Store that keeps everything in memory, for the life of the
// process. Records never expire, and a crash loses them all.
type Memory struct {
	// Hooks, if set, must be set before the store is used.
	Hooks Hooks

	mu       sync.Mutex // guards accounts and records
	accounts map[string]*Account
	records  map[string]*record
}

// record is the idempotency record of one key.
type record struct {
	fp       Fingerprint
	done     chan struct{} // closed once ans is set or the key is released
	ans      Answer
	released bool
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{accounts: make(map[string]*Account), records: make(map[string]*record)}
}

// account returns the account, creating it; the caller holds mu.
func (m *Memory) account(name []byte) *Account {
	a := m.accounts[string(name)]
	if a == nil {
		a = &Account{Balance: DefaultBalance}
		m.accounts[string(name)] = a
	}
	return a
}

// Get implements Store.
func (m *Memory) Get(account []byte) (Account, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return *m.account(account), nil
}

// Debit implements Store.
func (m *Memory) Debit(account []byte, amount int64, h Hold, ans func(Account) Answer) (Account, error) {
	m.mu.Lock()
	a := m.account(account)
	if a.Balance < amount {
		m.mu.Unlock()
		return *a, ErrInsufficientFunds
	}
	a.Balance -= amount
	a.Debits++
	after := *a
	var r *record
	if h.Key != "" {
		r = m.records[h.Key]
		r.ans = ans(after)
		// In memory there is no commit to come before: both changes are
		// made, under one lock.
		callHook(m.Hooks.BeforeCommit)
	}
	m.mu.Unlock()
	if r != nil {
		close(r.done)
		callHook(m.Hooks.AfterCommit)
	}
	return after, nil
}

// Claim implements Store.
func (m *Memory) Claim(key string, fp Fingerprint) (Claimed, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, seen := m.records[key]
	switch {
	case !seen:
		m.records[key] = &record{fp: fp, done: make(chan struct{})}
		return Claimed{State: ClaimTaken, Hold: Hold{Key: key}}, nil
	case r.fp != fp:
		return Claimed{State: ClaimConflict}, nil
	}
	select {
	case <-r.done:
		return Claimed{State: ClaimDone, Answer: r.ans}, nil
	default:
		return Claimed{State: ClaimRunning}, nil
	}
}

// Finish implements Store.
func (m *Memory) Finish(h Hold, ans Answer) error {
	m.mu.Lock()
	r := m.records[h.Key]
	r.ans = ans
	m.mu.Unlock()
	close(r.done)
	return nil
}

// Release implements Store.
func (m *Memory) Release(h Hold) error {
	m.mu.Lock()
	r := m.records[h.Key]
	delete(m.records, h.Key)
	r.released = true
	m.mu.Unlock()
	close(r.done)
	return nil
}

// Await implements Store.
func (m *Memory) Await(key string, fp Fingerprint, deadline time.Time, done <-chan struct{}) (Answer, error) {
	m.mu.Lock()
	r, ok := m.records[key]
	m.mu.Unlock()
	if !ok || r.fp != fp {
		return Answer{}, ErrReleased
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	callHook(m.Hooks.AwaitWaiting)
	select {
	case <-r.done:
	case <-t.C:
		return Answer{}, ErrAwaitExpired
	case <-done:
		return Answer{}, ErrClosing
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.released {
		return Answer{}, ErrReleased
	}
	return r.ans, nil
}

func callHook(f func()) {
	if f != nil {
		f()
	}
}
