package slack_test

// The registry of destinations is linked into the test binary, as it is
// into telemetryd, so that slack, discord and the others are channels.
import _ "github.com/mcpscope/telemetry/alerting/notify/registry"
