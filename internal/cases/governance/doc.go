// Package governance is the governance group: the client's retry budgets, breakers, hedging, pushback and cancellation.
package governance
