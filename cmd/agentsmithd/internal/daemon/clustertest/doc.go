// Package clustertest runs the daemon end to end against a real Redis
// Cluster. It is its own test binary because cluster mode hash-tags every
// Redis key process-wide (pkg/keys fixes the mode at the first key built),
// while the daemon package's tests use the specification's key names.
package clustertest
