// Package metrics exports a running dataplane.Engine's counters as Prometheus
// metrics and serves them over HTTP. It is apart from package dataplane so that
// a program embedding the dataplane does not link Prometheus or net/http
// unless it asks for metrics.
package metrics
