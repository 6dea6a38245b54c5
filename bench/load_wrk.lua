-- wrk script for bench/load.py: one method and path, optional bodies, figures as JSON.
--
--   wrk -s bench/load_wrk.lua URL -- METHOD PATH [BODIES_FILE [KEY_PREFIX [API_KEY]]]
--
-- BODIES_FILE holds one JSON request body a line; each thread's requests cycle through
-- them. KEY_PREFIX, when given, adds an Idempotency-Key unique to every request
-- (PREFIX-THREAD-N), so every settle is a new round and never a replay. API_KEY, when
-- given, is sent as "Authorization: Bearer API_KEY". Empty arguments count as not given.
-- done() prints one line "BENCH_JSON {...}" with throughput, latency percentiles (in
-- microseconds), the status code counts and wrk's socket errors.

local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  method = args[1] or "GET"
  path = args[2] or "/"
  bodies = {}
  if args[3] and args[3] ~= "" then
    for line in io.lines(args[3]) do
      if line ~= "" then
        bodies[#bodies + 1] = line
      end
    end
  end
  prefix = args[4]
  api_key = args[5]
  statuses = {}
  sent = 0
end

function request()
  sent = sent + 1
  local headers = {}
  local body = nil
  if #bodies > 0 then
    -- Threads start at different places so they do not send the same round together.
    body = bodies[((id * 7919 + sent) % #bodies) + 1]
    headers["Content-Type"] = "application/json"
  end
  if prefix and prefix ~= "" then
    headers["Idempotency-Key"] = prefix .. "-" .. id .. "-" .. sent
  end
  if api_key and api_key ~= "" then
    headers["Authorization"] = "Bearer " .. api_key
  end
  return wrk.format(method, path, headers, body)
end

function response(status, headers, body)
  local key = tostring(status)
  statuses[key] = (statuses[key] or 0) + 1
end

local function json_object(map)
  local parts = {}
  for k, v in pairs(map) do
    parts[#parts + 1] = string.format("%q:%d", tostring(k), v)
  end
  return "{" .. table.concat(parts, ",") .. "}"
end

function done(summary, latency, requests)
  local counts = {}
  for _, thread in ipairs(threads) do
    local seen = thread:get("statuses") or {}
    for code, n in pairs(seen) do
      counts[code] = (counts[code] or 0) + n
    end
  end
  local errors = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.1f},' ..
    '"statuses":%s,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    latency.mean, json_object(counts),
    errors.connect, errors.read, errors.write, errors.status, errors.timeout))
end
