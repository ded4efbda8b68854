package httpapi

import (
	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry/alerting"
)

// channelEnum is the enum of every channel field in /docs: the ids of the
// registry of integrations (alerting.Register), read when the server is
// built, so a destination added to the registry is in /docs and in
// request validation with no change here.
func channelEnum() []any {
	ids := alerting.ChannelIDs()
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// channelList is a rule's channels as a request carries them: an array
// of registered channel ids.
type channelList []string

// Schema lists the registered channel ids as the items' enum.
func (channelList) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeArray, Description: docRuleChannels,
		Items: &huma.Schema{Type: huma.TypeString, Enum: channelEnum()}}
}

// channelParam is a channel id in a query or path parameter.
type channelParam string

// Schema lists the registered channel ids as the enum.
func (channelParam) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeString, Enum: channelEnum()}
}
