// Package deploy is the deploy group: servers asked to stop while calls are in flight, and the clients that must lose none of them.
package deploy
