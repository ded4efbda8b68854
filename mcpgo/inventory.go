package mcpgo

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/client"
)

// A tool list is reported only when complete: a tools/list answer without
// nextCursor to a request without a cursor, or every page of one walk
// (the first page's answer names the cursor of the second, and so on, the
// last without nextCursor). A single page of a paginated list is never
// the whole tool set, so reporting it would show tools removed and added
// back at every walk (docs/inventory.md).

// Bounds of the walks followed at once: a walk whose next page does not
// come within walkTTL is forgotten, at most maxWalks are followed (the
// oldest forgotten first), and one of more than maxInventoryTools tools
// is not reported (the service takes at most that many).
const (
	maxWalks          = 64
	walkTTL           = 10 * time.Minute
	maxInventoryTools = 1000
)

// toolWalks follows paginated tools/list walks by the cursor each awaits,
// across sessions (a stateless HTTP client's pages reach the server in
// sessions of their own).
type toolWalks struct {
	mu     sync.Mutex
	byNext map[string]*toolWalk
}

type toolWalk struct {
	tools []*mcp.Tool
	at    time.Time // of its latest page
}

// page takes one answered tools/list page: the request's cursor ("" for
// the first page), the tools, and the answer's nextCursor. It returns the
// whole list and true when that page completes a walk (or is a whole list
// by itself).
func (w *toolWalks) page(cursor string, tools []*mcp.Tool, next string, now time.Time) ([]*mcp.Tool, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var walk *toolWalk
	if cursor == "" {
		if next == "" {
			return tools, len(tools) <= maxInventoryTools
		}
		walk = &toolWalk{}
	} else {
		walk = w.byNext[cursor]
		if walk == nil || now.Sub(walk.at) > walkTTL {
			delete(w.byNext, cursor)
			return nil, false // a page of a walk whose start this process did not answer
		}
		delete(w.byNext, cursor)
	}
	walk.tools = append(walk.tools, tools...)
	walk.at = now
	if len(walk.tools) > maxInventoryTools {
		return nil, false
	}
	if next == "" {
		return walk.tools, true
	}
	if w.byNext == nil {
		w.byNext = map[string]*toolWalk{}
	}
	w.byNext[next] = walk
	for len(w.byNext) > maxWalks {
		oldest := ""
		for c, x := range w.byNext {
			if oldest == "" || x.at.Before(w.byNext[oldest].at) {
				oldest = c
			}
		}
		delete(w.byNext, oldest)
	}
	return nil, false
}

// inventoryResend is how often an unchanged tool list is reported again.
const inventoryResend = time.Hour

// The definitions a report carries: a tool's when it is at most 64 KiB
// (what the service keeps), all of them while their sum stays within
// 1 MiB (far below the service's 4 MiB body limit); the other tools go by
// hash only.
const (
	inventoryDefinitionMax     = 64 << 10
	inventoryDefinitionsBudget = 1 << 20
)

// reportInventory posts a complete tool list (toolWalks) to the inventory
// endpoint in the background: once per distinct list per Telemetry, again
// at most hourly when unchanged, one post at a time (a list that arrives
// while one is in flight is reported with the next answer), none once
// Close was called.
func (t *Telemetry) reportInventory(tools []*mcp.Tool, serverVersion, protocol string) {
	inv := client.Inventory{ServerVersion: serverVersion, ProtocolVersion: protocol, Tools: []client.InventoryTool{}}
	budget := inventoryDefinitionsBudget
	for _, tool := range tools {
		if tool == nil {
			continue
		}
		part, err := schemaPart(tool, false)
		if err != nil {
			continue
		}
		it := client.InventoryTool{Name: tool.Name, SchemaHash: client.SchemaHash(part)}
		if b, err := json.Marshal(tool); err == nil {
			it.DefinitionBytes = int64(len(b))
		}
		if t.inventorySchemas {
			// The definition sent covers outputSchema too (docs/tool-changes.md).
			if def, err := schemaPart(tool, true); err == nil {
				if b := client.CanonicalJSON(def); len(b) <= inventoryDefinitionMax && len(b) <= budget {
					it.Schema, budget = b, budget-len(b)
				}
			}
		}
		inv.Tools = append(inv.Tools, it)
	}
	key := string(client.CanonicalJSON(inv))
	t.mu.Lock()
	last, seen := t.invSent[key]
	if t.invBusy || t.closing || (seen && time.Since(last) < inventoryResend) {
		t.mu.Unlock()
		return
	}
	t.invBusy = true
	t.invSent[key] = time.Now()
	if len(t.invSent) > 100 {
		clear(t.invSent) // bounded: a server with ever-changing lists reports them all again
		t.invSent[key] = time.Now()
	}
	t.invPosts.Add(1)
	t.mu.Unlock()
	go func() {
		defer t.invPosts.Done()
		ctx, cancel := context.WithTimeout(t.invCtx, 10*time.Second)
		defer cancel()
		err := t.c.PostInventory(ctx, inv)
		t.mu.Lock()
		t.invBusy = false
		if err != nil {
			delete(t.invSent, key) // not reported: try again with the next answer
		}
		t.mu.Unlock()
	}()
}

// schemaPart is the part of a tool its schema hash covers: description,
// inputSchema and annotations as JSON, absent members left out; with
// output, outputSchema too (the definition the inventory keeps).
func schemaPart(tool *mcp.Tool, output bool) (map[string]any, error) {
	raw, err := json.Marshal(tool)
	if err != nil {
		return nil, err
	}
	var all map[string]any
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, err
	}
	part := map[string]any{}
	for _, k := range []string{"description", "inputSchema", "annotations", "outputSchema"} {
		if v, ok := all[k]; ok && v != nil && (output || k != "outputSchema") {
			part[k] = v
		}
	}
	return part, nil
}
