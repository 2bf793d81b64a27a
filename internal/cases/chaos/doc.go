// Package chaos is the chaos group: fixed-seed random workloads under random fault schedules, each checked as a whole history.
package chaos
