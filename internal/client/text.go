package client

import "fmt"

// MarshalText writes c's name, as String does; an unknown Class is an
// error, so that no record holds a name nothing can read back.
func (c Class) MarshalText() ([]byte, error) { return marshalName(classNames[:], int(c), "class") }

// UnmarshalText reads a name String writes: NOT_SENT, NOT_EXECUTED,
// OUTCOME_UNKNOWN or FINAL.
func (c *Class) UnmarshalText(b []byte) error {
	i, err := unmarshalName(classNames[:], string(b), "class")
	*c = Class(i)
	return err
}

// MarshalText writes o's name, as String does; an unknown Outcome is an
// error.
func (o Outcome) MarshalText() ([]byte, error) {
	return marshalName(outcomeNames[:], int(o), "outcome")
}

// UnmarshalText reads a name String writes: CONNECT_FAILED, RESPONSE,
// TIMEOUT, ...
func (o *Outcome) UnmarshalText(b []byte) error {
	i, err := unmarshalName(outcomeNames[:], string(b), "outcome")
	*o = Outcome(i)
	return err
}

func marshalName(names []string, i int, what string) ([]byte, error) {
	if i > 0 && i < len(names) && names[i] != "" {
		return []byte(names[i]), nil
	}
	return nil, fmt.Errorf("client: %s %d has no name", what, i)
}

func unmarshalName(names []string, s, what string) (int, error) {
	for i, n := range names {
		if n != "" && n == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("client: unknown %s %q", what, s)
}
