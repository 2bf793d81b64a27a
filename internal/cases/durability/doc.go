// Package durability is the durability group: servers that crash and share stores, and exactly-once effects across restarts and instances.
package durability
