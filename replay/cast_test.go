package replay

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/engine"
	"pgregory.net/rapid"
)

// The page follows the cast: any cast (no victim, no storm, several
// storms, the probe, campaigns grouped or not) renders, and every display
// group is named and has its series.
func TestPropertyPageFollowsAnyCast(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := engine.DefaultScenario()
		s.Pool = 1024
		s.Ticks = rapid.IntRange(1, 900).Draw(t, "ticks")
		s.StormStart, s.StormEnd = 0, s.Ticks
		n := rapid.IntRange(1, 8).Draw(t, "campaigns")
		s.Cast = []engine.Campaign{}
		for i := range n {
			agent := rapid.SampledFrom(engine.AgentKinds).Draw(t, "agent")
			c, _ := engine.DefaultCampaign(agent)
			c.Name = fmt.Sprintf("%s-%d", agent, i)
			c.Tasks = min(c.Tasks, 100)
			if rapid.Bool().Draw(t, "grouped") {
				c.Group = agent + "s"
			}
			c.Window = engine.Window{Start: 0, End: s.Ticks}
			s.Cast = append(s.Cast, c)
		}
		r, err := engine.Run(s, engine.Options{Series: true})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := Write(&b, r); err != nil {
			t.Fatal(err)
		}
		html := b.String()
		d := embeddedDataOf(t, html)
		var names []string
		var held [][]int
		if err := json.Unmarshal(d["names"], &names); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(d["held"], &held); err != nil {
			t.Fatal(err)
		}
		if len(names) != len(r.Groups) || len(held) != len(r.Groups) {
			t.Fatalf("%d names, %d held series for %d groups", len(names), len(held), len(r.Groups))
		}
		for i, g := range r.Groups {
			if names[i] != g.Name || !strings.Contains(html, g.Name) {
				t.Fatalf("group %d is %q on the page, want %q", i, names[i], g.Name)
			}
		}
	})
}

type fataler interface {
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// embeddedDataOf is embeddedData for rapid's T.
func embeddedDataOf(t fataler, html string) map[string]json.RawMessage {
	const open, end = "<script>const BURSAR = ", ";</script>"
	i := strings.Index(html, open)
	if i < 0 {
		t.Fatal("no data script in the page")
	}
	rest := html[i+len(open):]
	j := strings.Index(rest, end)
	if j < 0 {
		t.Fatal("data script not closed")
	}
	var d map[string]json.RawMessage
	if err := json.Unmarshal([]byte(rest[:j]), &d); err != nil {
		t.Fatalf("the embedded data is not JSON: %v", err)
	}
	return d
}
