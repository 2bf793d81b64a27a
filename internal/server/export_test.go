package server

// SetAnswerSent sets the hook a worker calls right after handing an
// answer to its connection, and returns what restores it.
func SetAnswerSent(f func()) (restore func()) {
	old := answerSent
	answerSent = f
	return func() { answerSent = old }
}
