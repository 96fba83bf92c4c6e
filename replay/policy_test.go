package replay

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/engine"
)

// Every policy's run replays: the page embeds that run's grants, and its
// metrics table lists the policy-study metrics beside the model's.
func TestEveryPolicyReplays(t *testing.T) {
	for _, name := range engine.Policies {
		t.Run(name, func(t *testing.T) {
			s := engine.DefaultScenario()
			s.Policy = name
			r, err := engine.Run(s, engine.Options{Series: true, Journal: true})
			if err != nil {
				t.Fatal(err)
			}
			page := writeString(t, r)
			d := embeddedData(t, page)
			var grants struct{ T []int }
			if err := json.Unmarshal(d["grants"], &grants); err != nil {
				t.Fatal(err)
			}
			if len(grants.T) != len(r.Grants) || len(r.Grants) == 0 {
				t.Fatalf("%d grants embedded, the run has %d", len(grants.T), len(r.Grants))
			}
			for _, key := range append(append([]string{}, engine.ScalarKeys...), engine.StudyKeys...) {
				if !strings.Contains(page, key) {
					t.Errorf("the page does not show metric %s", key)
				}
			}
		})
	}
}
