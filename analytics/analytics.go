// Package analytics is the telemetry domain: the items MCP servers send, their
// validation, date ranges, the metric figures read back, and the interfaces
// that the clickhouse package implements. It imports no database.
package analytics
