// Package network is the network group: client and server on test hosts in network namespaces, whose links drop, delay or black-hole packets.
package network
