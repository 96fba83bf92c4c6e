--[[
Bursar's gate in slurmctld (job_submit/lua; docs/slurm.md).

A job in a gated partition is refused unless its --comment holds a valid,
unexpired Bursar lease token for its size, and its account (if given) is
the lease's campaign. An accepted job gets the campaign's account and a
time limit that ends no later than the lease (Slurm counts it in whole
minutes, rounded up; Bursar itself cancels the job at the lease's end).

The token is checked by `bursar-slurm-check` (cmd/bursar-slurm-check; or
`bursar slurm check`, the same code that signs it, slower to start): Lua
5.1, which Debian's slurmctld embeds, has no bit operations and no crypto
library, and an HMAC-SHA256 written in pure Lua 5.1 would be slow and an
own crypto implementation to trust.

Install: put this file beside slurm.conf, set the four values below,
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
-- Partitions that are NOT gated; every other one is (fail closed).
local UNGATED = { }

local function unset(v)
	return v == nil or v >= 65534
end

-- cpus is the job's size in CPUs (the pool's unit): the largest of what
-- it asks for directly and its tasks times CPUs per task.
local function cpus(job_desc)
	local n = 1
	if not unset(job_desc.min_cpus) then n = math.max(n, job_desc.min_cpus) end
	local tasks, per = job_desc.num_tasks, job_desc.cpus_per_task
	if not unset(tasks) then
		if unset(per) then per = 1 end
		n = math.max(n, tasks * per)
	end
	return n
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
	slurm.log_user("bursar: " .. msg)
	slurm.log_info("bursar gate: refused: %s", msg)
	return slurm.ERROR
end

-- check runs `BURSAR slurm check --key-file KEY TOKEN`:
-- ok LEASE CAMPAIGN GPUS SECONDS_LEFT ACCOUNT EXPIRES.
local function check(token)
	local once = ""
	if ONCE_DIR ~= "" then once = " --once-dir " .. ONCE_DIR end
	local f = io.popen(BURSAR .. " slurm check --key-file " .. KEY_FILE .. once .. " " .. token .. " 2>&1")
	if f == nil then return nil, "cannot run the Bursar token check" end
	local out = f:read("*a") or ""
	f:close()
	local lease, campaign, gpus, left, account, expires = string.match(out, "^ok (%d+) (%S+) (%d+) (%-?%d+) (%S+) (%d+)")
	if lease == nil then
		local why = string.match(out, "^refuse: ([^\n]*)") or ("the token check failed: " .. out)
		return nil, why
	end
	return { lease = tonumber(lease), campaign = campaign, gpus = tonumber(gpus), left = tonumber(left), account = account,
		expires = tonumber(expires) }
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	if not gated(job_desc) then return slurm.SUCCESS end
	local token = job_desc.comment
	if token == nil or token == "" then
		return refuse("this partition runs only jobs on a Bursar lease: submit through 'bursar lease --slurm' (docs/slurm.md)")
	end
	if #token > 256 or not string.match(token, "^bursar1:[%w%.:_-]+$") then
		return refuse("the job's --comment is not a Bursar lease token")
	end
	local l, why = check(token)
	if l == nil then return refuse(why) end
	local n = cpus(job_desc)
	if n > l.gpus then
		return refuse(string.format("the job asks for %d CPUs but lease %d is for %d", n, l.lease, l.gpus))
	end
	if job_desc.account ~= nil and job_desc.account ~= "" and string.lower(job_desc.account) ~= l.account then
		return refuse(string.format("lease %d is campaign %s's: the job must run under account %s, not %s",
			l.lease, l.campaign, l.account, job_desc.account))
	end
	job_desc.account = l.account
	-- The lease in the job's records (jobcomp's WcKey): what `bursar slurm
	-- reconcile` compares the job's size and end with, and what Bursar
	-- signals the lease's jobs by (scancel --wckey): made of the token's own
	-- fields, so that the wrapper knows it without asking Slurm.
	job_desc.wckey = string.format("bursar:%d:%s:%d:%d", l.lease, l.campaign, l.gpus, l.expires)
	job_desc.max_cpus = l.gpus
	local minutes = math.max(1, math.ceil(l.left / 60))
	if unset(job_desc.time_limit) or job_desc.time_limit > minutes then
		job_desc.time_limit = minutes
	end
	slurm.log_info("bursar gate: lease %d (%s, %d GPUs, %d s left) admits a job of %d CPUs, time limit %d min",
		l.lease, l.campaign, l.gpus, l.left, n, minutes)
	return slurm.SUCCESS
end

-- A user may not change a gated job's size, comment or account after
-- submission (a lower time limit is fine; Slurm itself refuses a higher
-- one from a user).
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	if modify_uid == 0 then return slurm.SUCCESS end
	if (job_desc.comment ~= nil) or (job_desc.account ~= nil) or not unset(job_desc.min_cpus)
		or not unset(job_desc.num_tasks) or not unset(job_desc.max_cpus) then
		return refuse("a job on a Bursar lease keeps its token, account and size")
	end
	return slurm.SUCCESS
end

return slurm.SUCCESS
