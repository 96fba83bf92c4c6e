--[[
Bursar's gate in slurmctld (job_submit/lua; docs/slurm.md).

A job in a gated partition is refused unless its --comment holds a valid,
unexpired Bursar lease token for its size (its CPUs, or its GPUs: UNIT
below; GPUs asked for with --gres=gpu:N, --gpus, --gpus-per-node or
--gpus-per-task never more than the lease's), and its account (if given)
is the lease's campaign. These are checked before the token is spent, so
a refused job leaves it usable. An accepted job gets the campaign's account and a
time limit of the lease's whole minutes left, which ends at most 5 s
after the lease (Bursar itself kills the job at the lease's end; the
limit is what ends it when no Bursar process is left).

The token is checked by `bursar-slurm-check` (cmd/bursar-slurm-check; or
`bursar slurm check`, the same code that signs it, slower to start): Lua
5.1, which Debian's slurmctld embeds, has no bit operations and no crypto
library, and an HMAC-SHA256 written in pure Lua 5.1 would be slow and an
own crypto implementation to trust.

Install: put this file beside slurm.conf, set the values below,
and add JobSubmitPlugins=lua to slurm.conf (scontrol reconfigure).
--]]

-- The checker (bursar-slurm-check, or the bursar binary) and the key the
-- service signs with (serve --slurm-key-file); the key file must be
-- readable by SlurmUser only. The checker runs with slurmctld's job lock
-- held: the small binary keeps that short.
local BURSAR = "@BURSAR@"
local KEY_FILE = "@KEY_FILE@"
-- A folder, writable by SlurmUser only, where each lease that admitted a
-- job is recorded, so that its token admits no second one ("" : a token
-- admits jobs until it expires).
local ONCE_DIR = "@ONCE_DIR@"
-- slurmctld checks some things only after the plugin (an association the
-- user lacks, --test-only, a reservation or node it does not know): a
-- token spent on such a submission admitted no job. With VERIFY_CLAIMS
-- the check leaves a verifier behind (detached, outside slurmctld's job
-- lock) that asks squeue a few seconds later whether a job carries the
-- token, and unspends it when none does (docs/slurm.md). It needs squeue
-- on slurmctld's PATH.
local VERIFY_CLAIMS = true
-- Partitions that are NOT gated; every other one is (fail closed).
local UNGATED = { }
-- What a lease's size counts: "cpu" where CPUs stand in for GPUs (a
-- cluster without GPU GRES, as the one-node pilot), "gpu" where the
-- partition's GPUs are the pool (serve --pool-from-slurm reads them).
-- Either way a job asking for more GPUs than its lease is refused.
local UNIT = "cpu"
-- Who may change a gated job's limits, size, account or partition after
-- submission (slurm_job_modify below): root, SlurmUser (its uid here) and
-- the site's operators (uids: { [1001] = true }).
local SLURM_USER_UID = 0
local OPERATORS = { }

local function unset(v)
	return v == nil or v >= 65534
end

-- nodes is how many nodes the job may be spread over: -N's maximum, or
-- without one the larger of its minimum and the tasks (Slurm may give
-- each task a node of its own).
local function nodes(job_desc)
	if not unset(job_desc.max_nodes) then return math.max(1, job_desc.max_nodes) end
	local n = 1
	if not unset(job_desc.min_nodes) then n = math.max(n, job_desc.min_nodes) end
	if not unset(job_desc.num_tasks) then n = math.max(n, job_desc.num_tasks) end
	return n
end

-- cpus is the job's size in CPUs (the pool's unit): the largest of what
-- it asks for directly (min_cpus), its nodes, its tasks times CPUs per task, and
-- per node (--mincpus: pn_min_cpus; --ntasks-per-node times CPUs per
-- task) times its nodes. Slurm 22.05 hands --mincpus=16 to the plugin as
-- pn_min_cpus only (min_cpus stays 1), and gives the job 16 CPUs.
local function cpus(job_desc)
	local n = 1
	if not unset(job_desc.min_cpus) then n = math.max(n, job_desc.min_cpus) end
	local per = job_desc.cpus_per_task
	if unset(per) then per = 1 end
	local tasks = job_desc.num_tasks
	if not unset(tasks) then n = math.max(n, tasks * per) end
	local nn = nodes(job_desc)
	-- At least a CPU on each node it may get: -N 2 (or -w a,b, which the
	-- client turns into -N 2) is 2 CPUs however few tasks it has (srun and
	-- sbatch also set min_cpus so; a job description from elsewhere may not).
	n = math.max(n, nn)
	if not unset(job_desc.pn_min_cpus) then n = math.max(n, nn * job_desc.pn_min_cpus) end
	if not unset(job_desc.ntasks_per_node) then
		-- Tasks per node times the nodes -N fixes (without -N the tasks
		-- above bound it: -n 8 --ntasks-per-node=4 is two nodes).
		local fixed = 1
		if not unset(job_desc.max_nodes) then fixed = math.max(1, job_desc.max_nodes)
		elseif not unset(job_desc.min_nodes) then fixed = math.max(1, job_desc.min_nodes) end
		n = math.max(n, fixed * job_desc.ntasks_per_node * per)
	end
	return n
end

-- The size options the gate judges: the CPUs (min_cpus, num_tasks,
-- cpus_per_task, pn_min_cpus, ntasks_per_node, min/max_nodes: cpus
-- above), the GPUs (the tres_per_* strings) and CPUs per GPU
-- (cpus_per_tres: the check counts them), and memory, which Bursar does
-- not meter (docs/slurm.md). Every other way of shaping a job's size is
-- refused in a gated partition: each could give the job more of the node
-- than the count above says (whole cores for a thread, whole sockets,
-- the whole node).
local UNJUDGED = {
	{ "ntasks_per_socket", "--ntasks-per-socket" }, { "ntasks_per_core", "--ntasks-per-core" },
	{ "ntasks_per_gpu", "--ntasks-per-gpu" }, { "ntasks_per_tres", "--ntasks-per-gpu" },
	{ "threads_per_core", "--threads-per-core or --hint" }, { "cores_per_socket", "--cores-per-socket or -B" },
	{ "sockets_per_node", "--sockets-per-node or -B" },
}

-- Every field of the job description (JOB_FIELDS below) is one of three
-- kinds for a submission: SIZE_JUDGED, which the gate counts against the
-- lease (cpus above, the check's GPUs, CPUs per GPU and array, and the
-- shapes it refuses below: --exclusive, --mem=0, several nodes by name);
-- UNJUDGED above and the boards (unjudged below), refused; and NOT_SIZE,
-- which do not make a job larger than its count (memory is not metered:
-- docs/slurm.md, "Sizes"). TestGateFieldLists (cmd/bursar) checks that
-- each field is of exactly one kind, so a field is never left unjudged
-- by omission.
local SIZE_JUDGED = { "min_cpus", "max_cpus", "num_tasks", "cpus_per_task", "pn_min_cpus", "ntasks_per_node", "min_nodes",
	"max_nodes", "tres_per_job", "tres_per_node", "tres_per_task", "tres_per_socket", "gres", "cpus_per_tres", "array_inx",
	"shared", "min_mem_per_node", "req_nodes" }
local NOT_SIZE = { "account", "acctg_freq", "admin_comment", "batch_features", "begin_time", "burst_buffer", "clusters",
	"comment", "container", "contiguous", "cpu_freq_min", "cpu_freq_max", "cpu_freq_gov", "delay_boot", "dependency",
	"end_time", "extra", "exc_nodes", "features", "licenses", "mail_type", "mail_user", "mem_per_tres", "min_mem_per_cpu",
	"name", "network", "nice", "partition", "pn_min_memory", "pn_min_tmp_disk", "power_flags", "prefer", "priority", "qos",
	"reboot", "req_switch", "requeue", "reservation", "script", "site_factor", "std_err", "std_in", "std_out", "time_limit",
	"time_min", "tres_bind", "tres_freq", "wait4switch", "wckey", "work_dir" }

-- unjudged says which option of the job's size the gate does not judge
-- (nil: none).
local function unjudged(job_desc)
	for _, f in ipairs(UNJUDGED) do
		if not unset(job_desc[f[1]]) then return f[2] end
	end
	local boards = job_desc.boards_per_node
	if boards ~= nil and boards ~= 0 and not unset(boards) then return "--boards-per-node" end
	boards = job_desc.ntasks_per_board
	if boards ~= nil and boards ~= 0 and not unset(boards) then return "--ntasks-per-board" end
	boards = job_desc.sockets_per_board
	if boards ~= nil and boards ~= 0 and not unset(boards) then return "--sockets-per-board" end
	-- -w with several nodes gets the job a CPU on each whatever -N says;
	-- one node by name is what -N 1 counts.
	local req = job_desc.req_nodes
	if req ~= nil and string.find(req, "[,%[]") then return "-w/--nodelist with several nodes (give -N)" end
	-- shared: 0 --exclusive, 2 --exclusive=user, 3 --exclusive=mcs; each
	-- keeps other jobs off the job's nodes (1 is --oversubscribe).
	local shared = job_desc.shared
	if shared ~= nil and not unset(shared) and shared ~= 1 then return "--exclusive" end
	-- --mem=0 asks for all of each node's memory.
	if job_desc.min_mem_per_node == 0 then return "--mem=0" end
	return nil
end

local function gated(job_desc)
	local part = job_desc.partition
	if part == nil then return true end
	for p in string.gmatch(part, "[^,]+") do
		if not UNGATED[p] then return true end
	end
	return false
end

local function refuse(msg)
	-- log_user formats its first argument: a reason with a % in it
	-- (--array=0-7%2) must not be the format, or the call fails.
	slurm.log_user("%s", "bursar: " .. msg)
	slurm.log_info("bursar gate: refused: %s", msg)
	return slurm.ERROR
end

-- quote makes a value from the job description one shell word, or nil
-- when it holds anything a TRES string or an account name does not.
local function quote(v)
	if v == nil then return nil end
	v = tostring(v)
	if #v > 256 or not string.match(v, "^[%w:/%.,()_=+%%-]*$") then return nil end
	return "'" .. v .. "'"
end

-- check runs `BURSAR slurm check --key-file KEY [--once-dir DIR] JOB TOKEN`,
-- where JOB is what the job asks for (its CPUs, account, user, GPUs, nodes
-- and tasks): the check refuses a job larger than its lease, under another
-- account or of another user than the token names before it spends the token (one token, one job), so that a
-- refused submission leaves the token for a corrected one. It answers
-- ok LEASE CAMPAIGN GPUS SECONDS_LEFT ACCOUNT EXPIRES MINUTES (MINUTES: the
-- job's time limit).
local function check(token, job_desc)
	local args = { BURSAR, "slurm check --key-file", KEY_FILE }
	if ONCE_DIR ~= "" then
		table.insert(args, "--once-dir " .. ONCE_DIR)
		if VERIFY_CLAIMS then table.insert(args, "--verify") end
	end
	table.insert(args, "--unit " .. UNIT)
	table.insert(args, "--cpus " .. cpus(job_desc))
	-- user_name is what slurmctld made of the submission's authenticated
	-- uid (job_desc.user_id): the token must name that user.
	local fields = { { "--account", job_desc.account }, { "--user", job_desc.user_name }, { "--tres-per-job", job_desc.tres_per_job },
		{ "--tres-per-node", job_desc.tres_per_node }, { "--tres-per-task", job_desc.tres_per_task },
		{ "--tres-per-socket", job_desc.tres_per_socket }, { "--cpus-per-tres", job_desc.cpus_per_tres },
		{ "--array", job_desc.array_inx } }
	for _, f in ipairs(fields) do
		if f[2] ~= nil and f[2] ~= "" then
			local q = quote(f[2])
			if q == nil then return nil, "the job's " .. string.sub(f[1], 3) .. " holds characters a Bursar gate does not accept" end
			table.insert(args, f[1] .. " " .. q)
		end
	end
	local counts = { { "--min-nodes", job_desc.min_nodes }, { "--max-nodes", job_desc.max_nodes }, { "--tasks", job_desc.num_tasks } }
	for _, f in ipairs(counts) do
		if not unset(f[2]) then table.insert(args, f[1] .. " " .. string.format("%d", f[2])) end
	end
	table.insert(args, token)
	local f = io.popen(table.concat(args, " ") .. " 2>&1")
	if f == nil then return nil, "cannot run the Bursar token check" end
	local out = f:read("*a") or ""
	f:close()
	local lease, campaign, gpus, left, account, expires, minutes = string.match(out, "^ok (%d+) (%S+) (%d+) (%-?%d+) (%S+) (%d+) (%d+)")
	if lease == nil then
		local why = string.match(out, "^refuse: ([^\n]*)") or ("the token check failed: " .. out)
		return nil, why
	end
	return { lease = tonumber(lease), campaign = campaign, gpus = tonumber(gpus), left = tonumber(left), account = account,
		expires = tonumber(expires), minutes = tonumber(minutes) }
end

local function submit(job_desc, part_list, submit_uid)
	if not gated(job_desc) then return slurm.SUCCESS end
	local token = job_desc.comment
	if token == nil or token == "" then
		return refuse("this partition runs only jobs on a Bursar lease: submit through 'bursar lease --slurm' (docs/slurm.md)")
	end
	if #token > 256 or not string.match(token, "^bursar2:[%w%.:_-]+$") then
		if string.match(token, "^bursar1:") then
			return refuse("the job's --comment is a Bursar token of an older kind, which names no user: ask for a new one (bursar lease --slurm does)")
		end
		return refuse("the job's --comment is not a Bursar lease token")
	end
	-- A heterogeneous job reaches the plugin once per component, each
	-- with the same token: refused here, before the check spends it.
	if not unset(job_desc.het_job_offset) then
		return refuse("a heterogeneous job (hetjob, : between components) cannot run on one Bursar lease: submit its components as jobs of their own, each on its own lease")
	end
	local opt = unjudged(job_desc)
	if opt ~= nil then
		return refuse(opt .. " shapes a job's size in a way a Bursar lease does not count: leave it out (docs/slurm.md, \"Sizes\")")
	end
	local l, why = check(token, job_desc)
	if l == nil then return refuse(why) end
	job_desc.account = l.account
	-- The lease in the job's records (jobcomp's WcKey): what `bursar slurm
	-- reconcile` compares the job's size and end with, and what Bursar
	-- signals the lease's jobs by (scancel --wckey): made of the token's own
	-- fields, so that the wrapper knows it without asking Slurm.
	job_desc.wckey = string.format("bursar:%d:%s:%d:%d", l.lease, l.campaign, l.gpus, l.expires)
	if UNIT == "cpu" then job_desc.max_cpus = l.gpus end
	-- A requeued job starts again with a fresh time limit: never.
	job_desc.requeue = 0
	-- Slurm's own end of the job, which holds with no Bursar process
	-- left: the lease's whole minutes left (the check's MINUTES:
	-- floor((expiry - now + 5 s) / 60), at least 1, or the check refused),
	-- so the limit ends at most 5 s after the lease. Slurm 22.05's
	-- job_submit/lua can neither read nor set a job's deadline or
	-- warn_signal/warn_time: the wrapper asks for the warning (--signal),
	-- and docs/slurm.md ("No Bursar left") states the backstop.
	local minutes = l.minutes
	if unset(job_desc.time_limit) or job_desc.time_limit > minutes then
		job_desc.time_limit = minutes
	end
	slurm.log_info("bursar gate: lease %d (%s, %d GPUs, %d s left) admits a job of %d CPUs, time limit %d min",
		l.lease, l.campaign, l.gpus, l.left, cpus(job_desc), minutes)
	return slurm.SUCCESS
end

-- The changes a user may make to a gated job (or one a change would
-- gate): its name, nice, mail settings, dependencies, and hold and release
-- (priority 0 and back). Slurm 22.05 lets a user change a *pending* job's
-- time limit (raised, too), WcKey, GRES and partition with scontrol
-- update (issue 35); none of those reach the gate again. So these are
-- the only changes allowed: MODIFY_ALLOWED, and every other field of
-- JOB_FIELDS that a change sets is refused.
local MODIFY_ALLOWED = { name = true, nice = true, mail_type = true, mail_user = true, dependency = true, priority = true }

-- JOB_FIELDS are the job description's fields that Slurm 22.05's
-- job_submit/lua hands the plugin (its _get_job_req_field), each with the
-- name a user would give the change (scontrol update's, or the option's).
-- A field missing here would pass a change unseen: TestGateFieldLists
-- (cmd/bursar) checks that every one of them is listed.
local JOB_FIELDS = {
	{ "account", "Account" }, { "acctg_freq", "AcctgFreq" }, { "admin_comment", "AdminComment" }, { "array_inx", "ArrayTaskThrottle" },
	{ "batch_features", "BatchFeatures" }, { "begin_time", "StartTime" }, { "boards_per_node", "BoardsPerNode" },
	{ "burst_buffer", "BurstBuffer" }, { "clusters", "Clusters" }, { "comment", "Comment" }, { "container", "Container" },
	{ "contiguous", "Contiguous" }, { "cores_per_socket", "CoresPerSocket" }, { "cpu_freq_min", "CpuFreq" },
	{ "cpu_freq_max", "CpuFreq" }, { "cpu_freq_gov", "CpuFreq" }, { "cpus_per_task", "CPUsPerTask" },
	{ "cpus_per_tres", "CpusPerTres" }, { "delay_boot", "DelayBoot" }, { "dependency", "Dependency" }, { "end_time", "EndTime" },
	{ "extra", "Extra" }, { "exc_nodes", "ExcNodeList" }, { "features", "Features" }, { "gres", "Gres" },
	{ "licenses", "Licenses" }, { "mail_type", "MailType" }, { "mail_user", "MailUser" }, { "max_cpus", "NumCPUs" },
	{ "max_nodes", "NumNodes" }, { "mem_per_tres", "MemPerTres" }, { "min_cpus", "NumCPUs" }, { "min_mem_per_cpu", "MinMemoryCPU" },
	{ "min_mem_per_node", "MinMemoryNode" }, { "min_nodes", "NumNodes" }, { "name", "Name" }, { "network", "Network" },
	{ "nice", "Nice" }, { "ntasks_per_board", "NumTasksPerBoard" }, { "ntasks_per_core", "NumTasksPerCore" },
	{ "ntasks_per_gpu", "NumTasksPerGpu" }, { "ntasks_per_node", "NumTasksPerNode" }, { "ntasks_per_socket", "NumTasksPerSocket" },
	{ "ntasks_per_tres", "NumTasksPerTres" }, { "num_tasks", "NumTasks" }, { "partition", "Partition" },
	{ "pn_min_cpus", "MinCPUsNode" }, { "pn_min_memory", "MinMemoryNode" }, { "pn_min_tmp_disk", "MinTmpDiskNode" },
	{ "power_flags", "Power" }, { "prefer", "Prefer" }, { "priority", "Priority" }, { "qos", "QOS" }, { "reboot", "Reboot" },
	{ "req_nodes", "ReqNodeList" }, { "req_switch", "Switches" }, { "requeue", "Requeue" }, { "reservation", "Reservation" },
	{ "script", "Script" }, { "shared", "OverSubscribe" }, { "site_factor", "SiteFactor" }, { "sockets_per_board", "SocketsPerBoard" },
	{ "sockets_per_node", "SocketsPerNode" }, { "std_err", "StdErr" }, { "std_in", "StdIn" }, { "std_out", "StdOut" },
	{ "threads_per_core", "ThreadsPerCore" }, { "time_limit", "TimeLimit" }, { "time_min", "TimeMin" }, { "tres_bind", "TresBind" },
	{ "tres_freq", "TresFreq" }, { "tres_per_job", "TresPerJob" }, { "tres_per_node", "TresPerNode" },
	{ "tres_per_socket", "TresPerSocket" }, { "tres_per_task", "TresPerTask" }, { "wait4switch", "Switches" },
	{ "wckey", "WCKey" }, { "work_dir", "WorkDir" },
}

-- MODIFY_IGNORED are the fields of a change that say who asks or how,
-- not what changes (scontrol update fills them in: the requester's uid
-- and name, its host, default flags; the association's defaults), and
-- those that cannot be read as a change (tables, the het job's offset).
-- Neither allowed nor refused: not looked at.
local MODIFY_IGNORED = { alloc_node = true, argc = true, argv = true, bitflags = true, cron_job = true, default_account = true,
	default_qos = true, environment = true, group_id = true, het_job_offset = true, immediate = true, pack_job_offset = true,
	req_context = true, selinux_context = true, spank_job_env = true, spank_job_env_size = true, user_id = true, user_name = true }

-- ZERO_UNSET are the numeric fields a change leaves at 0 when it does not
-- set them (seen in the job_modify hook of Slurm 22.05).
local ZERO_UNSET = { begin_time = true, end_time = true, boards_per_node = true, sockets_per_board = true,
	ntasks_per_board = true, power_flags = true }

local function privileged(uid)
	return uid == 0 or uid == SLURM_USER_UID or OPERATORS[uid] == true
end

-- changed says whether the change sets field v: a string (or any value
-- not a number or a boolean false), a number of ZERO_UNSET not 0, or a
-- number other than Slurm's "not given" (NO_VAL16 65534, NO_VAL
-- 4294967294, NO_VAL64 about 1.8e19). INFINITE (TimeLimit=UNLIMITED) is a
-- change.
local function changed(name, v)
	if v == nil or v == false then return false end
	if type(v) ~= "number" then return true end
	if ZERO_UNSET[name] and v == 0 then return false end
	return v ~= 65534 and v ~= 4294967294 and v < 1.8e19
end

local function modify(job_desc, job_rec, part_list, modify_uid)
	if privileged(modify_uid) then return slurm.SUCCESS end
	local becomes = job_desc.partition ~= nil and gated(job_desc)
	if not gated(job_rec) and not becomes then return slurm.SUCCESS end
	for _, f in ipairs(JOB_FIELDS) do
		if not MODIFY_ALLOWED[f[1]] and changed(f[1], job_desc[f[1]]) then
			return refuse("a job on a Bursar lease keeps its limits, size, account and partition: " .. f[2] ..
				" cannot be changed (docs/slurm.md, \"Changes to a job\")")
		end
	end
	return slurm.SUCCESS
end

-- A Lua error in a hook is not a refusal: slurmctld went on and admitted
-- the job (seen with a format error in a refusal's message). So each hook
-- runs under pcall and an error refuses (fail closed).
function slurm_job_submit(job_desc, part_list, submit_uid)
	local ok, rc = pcall(submit, job_desc, part_list, submit_uid)
	if not ok then return refuse("the gate failed (" .. tostring(rc) .. "): refused") end
	return rc
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	local ok, rc = pcall(modify, job_desc, job_rec, part_list, modify_uid)
	if not ok then return refuse("the gate failed (" .. tostring(rc) .. "): refused") end
	return rc
end

return slurm.SUCCESS
