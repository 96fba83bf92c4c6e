package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slurm2205JobFields are the job description's fields that Slurm 22.05's
// job_submit/lua gives a plugin (read off job_submit_lua.so of Debian's
// slurm-wlm-basic-plugins 22.05.8, and each seen in the hooks on the
// one-node cluster).
var slurm2205JobFields = strings.Fields(`account acctg_freq admin_comment alloc_node argc argv array_inx batch_features
	begin_time bitflags boards_per_node burst_buffer clusters comment container contiguous cores_per_socket cpu_freq_min
	cpu_freq_max cpu_freq_gov cpus_per_task cpus_per_tres cron_job default_account default_qos delay_boot dependency end_time
	environment extra exc_nodes features gres group_id het_job_offset immediate licenses mail_type mail_user max_cpus
	max_nodes mem_per_tres min_cpus min_mem_per_cpu min_mem_per_node min_nodes name network nice ntasks_per_board
	ntasks_per_core ntasks_per_gpu ntasks_per_node ntasks_per_socket ntasks_per_tres num_tasks pack_job_offset partition
	pn_min_cpus pn_min_memory pn_min_tmp_disk power_flags prefer priority qos reboot req_context req_nodes req_switch
	requeue reservation script selinux_context shared site_factor sockets_per_board sockets_per_node spank_job_env
	spank_job_env_size std_err std_in std_out threads_per_core time_limit time_min tres_bind tres_freq tres_per_job
	tres_per_node tres_per_socket tres_per_task user_id user_name wait4switch wckey work_dir`)

// luaList is the quoted names in the Lua table `local NAME = { … }` of
// src (the first string of each { "field", … } pair, or each string, or
// each key = true).
func luaList(t *testing.T, src, name string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?s)\nlocal ` + name + ` = (\{.*?\n?\})\n`).FindStringSubmatch(src)
	require.NotNil(t, m, "no table %s in job_submit.lua", name)
	var out []string
	if strings.Contains(m[1], "= true") {
		for _, k := range regexp.MustCompile(`(\w+) = true`).FindAllStringSubmatch(m[1], -1) {
			out = append(out, k[1])
		}
		return out
	}
	pairs := regexp.MustCompile(`\{ "(\w+)", "[^"]*" \}`).FindAllStringSubmatch(m[1], -1)
	if len(pairs) > 0 {
		for _, p := range pairs {
			out = append(out, p[1])
		}
		return out
	}
	for _, q := range regexp.MustCompile(`"(\w+)"`).FindAllStringSubmatch(m[1], -1) {
		out = append(out, q[1])
	}
	return out
}

// The gate's lists of job fields (scripts/slurm/job_submit.lua) cover
// every field Slurm 22.05 hands the plugin: a change to a gated job is
// refused unless its field is one of the few allowed (issue 35: the
// modify hook's list of refused fields left others through), and a
// submission's every field is of exactly one kind for its size (counted,
// refused, or not a size), so no size option is accepted by omission.
func TestGateFieldLists(t *testing.T) {
	b, err := os.ReadFile("../../scripts/slurm/job_submit.lua")
	require.NoError(t, err)
	src := string(b)
	fields := luaList(t, src, "JOB_FIELDS")
	ignored := luaList(t, src, "MODIFY_IGNORED")
	all := append(slices.Clone(fields), ignored...)
	slices.Sort(all)
	want := slices.Clone(slurm2205JobFields)
	slices.Sort(want)
	assert.Equal(t, want, slices.Compact(all), "JOB_FIELDS and MODIFY_IGNORED together are Slurm 22.05's job fields, each once")
	assert.Len(t, all, len(want), "no field twice")
	for _, f := range luaList(t, src, "MODIFY_ALLOWED") {
		assert.Contains(t, fields, f, "an allowed change is a field of JOB_FIELDS")
		assert.NotContains(t, []string{"time_limit", "wckey", "gres", "partition", "account", "array_inx", "requeue", "comment"}, f)
	}

	kinds := map[string][]string{}
	for _, list := range []string{"SIZE_JUDGED", "UNJUDGED", "NOT_SIZE"} {
		for _, f := range luaList(t, src, list) {
			kinds[f] = append(kinds[f], list)
		}
	}
	// The boards, refused by unjudged() itself.
	for _, f := range []string{"boards_per_node", "ntasks_per_board", "sockets_per_board"} {
		require.Contains(t, src, "job_desc."+f)
		kinds[f] = append(kinds[f], "unjudged()")
	}
	for _, f := range fields {
		assert.Len(t, kinds[f], 1, "field %s is of exactly one kind for a submission's size: %v", f, kinds[f])
	}
	for f := range kinds {
		assert.Contains(t, fields, f, "a size list names a field of JOB_FIELDS")
	}
}
