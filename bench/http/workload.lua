-- wrk script shared by every HTTP scenario of bench/run.ts.
--   wrk ... -s workload.lua <url> -- LINES_FILE METHOD PATH TOKEN [THINK_MS]
-- LINES_FILE holds one request target (GET) or one JSON body (POST) per line;
-- requests cycle through them, pre-formatted once so wrk spends its time on I/O.
-- THINK_MS, when given and above 0, paces each connection: after an answer it
-- waits a random time (exponential, that mean, in whole ms as wrk's timers
-- count) before the next request, so wrk sleeps between sends and the rate is
-- about connections / (THINK_MS + latency), less a little for the timers'
-- whole ms (load-tools.ts, runPaced).
-- done() prints one JSON line (prefixed "WRK_RESULT ") for bench/http/load-tools.ts,
-- with the CPU wrk itself used.
local requests = {}
local count = 0
local at = 0

function init(args)
  local file, method, path, token = args[1], args[2], args[3], args[4]
  local headers = {}
  if token ~= nil and token ~= "" then headers["Authorization"] = "Bearer " .. token end
  if method == "POST" then headers["Content-Type"] = "application/json" end
  for line in io.lines(file) do
    if line ~= "" then
      count = count + 1
      if method == "POST" then
        requests[count] = wrk.format("POST", path, headers, line)
      else
        requests[count] = wrk.format("GET", line, headers)
      end
    end
  end
  -- Each wrk thread starts at its own place in the list.
  at = math.random(count) - 1
  local think = tonumber(args[5] or "0") or 0
  -- wrk asks for a delay only when the function exists, after init.
  if think > 0 then
    delay = function()
      return math.floor(-math.log(1 - math.random()) * think + 0.5)
    end
  end
end

function request()
  at = at % count + 1
  return requests[at]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_RESULT {"requests":%d,"durationUs":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50Us":%d,"p99Us":%d,"p999Us":%d,"maxUs":%d,"cpuUs":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max, os.clock() * 1e6))
end
