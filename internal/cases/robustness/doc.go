// Package robustness is the robustness group: hostile clients and overload attacking a server while a well-behaved client is served.
package robustness
