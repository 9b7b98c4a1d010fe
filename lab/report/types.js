// The shapes of the lab's results, as JSDoc types only: a run record (Run)
// and the figures it holds, a results object (Results), a recording's summary
// (RecordingInfo), and the shapes the tables build from runs (RunTable,
// Supported). No code: the report room's modules and the commands name
// these types from here (`import('./types.js').Run`).

export {};

/**
 * @typedef {object} Stats
 * @property {number | null} [mean]
 * @property {number | null} [dev]
 * @property {number | null} [p50]
 * @property {number | null} [p95]
 * @property {number | null} [p99]
 * @property {number | null} [max]
 * @property {number | null} [n]
 */

/**
 * setupMs of a p2p run (lab/report/aggregate.js aggregateSetup): signaling open and
 * peer setup (channel open) per connection, the peer setup milestones, the
 * candidate types seen and the bytes setup took. Older records may carry
 * other delay statistics beside these.
 *
 * @typedef {object} SetupDelays
 * @property {Stats | null} [signaling]
 * @property {Stats | null} [peer]
 * @property {Record<string, Stats | null>} [phases] offerAnswerMs, iceConnectedMs, dtlsConnectedMs, channelOpenMs
 * @property {Record<string, number>} [candidateTypes] connections per selected candidate pair type
 * @property {Record<string, Stats | null>} [setupBytes] sent, received, packetsSent, packetsReceived
 */

/**
 * The data channel parameters the clients read back (lab/report/aggregate.js aggregateChannel).
 *
 * @typedef {object} ChannelParams
 * @property {boolean | null} [ordered]
 * @property {number | null} [maxRetransmits]
 * @property {number | null} [maxPacketLifeTime]
 * @property {boolean | null} [uniform]
 * @property {number} [clients] clients that reported these
 */

/**
 * A mixed fleet's figures per browser (lab/report/aggregate.js byBrowserOf).
 *
 * @typedef {object} BrowserFigures
 * @property {number} [clients]
 * @property {Stats | null} [rt]
 * @property {number | null} [lossPct]
 * @property {number | null} [dups]
 * @property {number | null} [reorders]
 * @property {number | null} [jitterMs]
 */

/**
 * Freshness at the receivers (docs/architecture.md "Freshness"; lab/report/aggregate.js freshnessOf).
 *
 * @typedef {object} FreshnessFigures
 * @property {number | null} [updatesPerStreamPerS]
 * @property {{ p50?: number | null, p99?: number | null, max?: number | null } | null} [freezeMs]
 * @property {number | null} [frozenPct]
 * @property {number} [streams]
 * @property {number} [gaps]
 */

/**
 * A run on several relays joined through NATS (lab/target/cluster.js clusterRunFields).
 *
 * @typedef {object} ClusterFigures
 * @property {number | null} [nodes]
 * @property {string} [placement]
 * @property {number | null} [crossNodeUpdates]
 * @property {number | null} [crossNodePct]
 * @property {number} [remoteUpdatesDelivered]
 * @property {number} [acksRouted]
 * @property {number} [brokerMessages]
 * @property {string | null} [natsVersion]
 * @property {string} [natsUrl]
 * @property {number | null} [natsCpuPct]
 * @property {(number | null)[]} [relayCpuPct]
 * @property {number} [unknownSender]
 */

/**
 * A relay killed mid-run (lab/target/cluster.js clusterRunFields).
 *
 * @typedef {object} FailoverFigures
 * @property {number} [killedAtS]
 * @property {number} [relayPid]
 * @property {number | null} [clientsMoved]
 * @property {{ p50?: number | null, p99?: number | null, max?: number | null } | null} [reconnectMs]
 * @property {number | null} [lostUpdates]
 * @property {number} [stillDown]
 * @property {string} [note]
 */

/**
 * Clients that lost the relay and reconnected (lab/report/aggregate.js outageOf).
 *
 * @typedef {object} OutageFigures
 * @property {number} clientsReconnected
 * @property {number} reconnects
 * @property {number} stillDown
 * @property {Stats} outageMs
 * @property {number} updatesLost
 * @property {number} abandoned
 * @property {number} pausedCycles
 */

/**
 * One run as docs/architecture.md's results.json holds it. Every value may be null or
 * missing (older files, failed points) and runs may carry more fields than these;
 * lab/sim/sim.js, lab/bench/bench.js, lab/target/cluster.js and the browsers study (lab/browsers/) add
 * the optional ones.
 *
 * @typedef {object} Run
 * @property {string} transport
 * @property {number | null} [clients]
 * @property {number | null} [group]
 * @property {number | null} [cycleMs]
 * @property {string | null} [cycleMode] 'pipelined' | 'gated' (docs/architecture.md "The action cycle")
 * @property {unknown} [browser] what drove a bench: a name, names joined by '+', or older shapes ({@link describeDriver})
 * @property {unknown} [sim] what drove a sim: `{ workers, generator, clientsPerProcess }` in lab/sim/sim.js
 * @property {string | import('./net-tables.js').NetRecord} [net] network profile record (--net), or its name on a failed point
 * @property {Record<string, BrowserFigures>} [byBrowser] per browser of a mixed fleet (aggregate.js byBrowserOf)
 * @property {Stats | null} [rt]
 * @property {Stats | null} [rtWarmup] RTs of warm-up updates, reported apart
 * @property {{ mean?: number | null, max?: number | null, n?: number } | null} [rts]
 * @property {{ server?: number | null, clients?: number | null } | null} [cpu]
 * @property {number | null} [serverCpuUsPerUpdate]
 * @property {number | null} [serverWindowS] the span the server's counters and CPU cover (sim; longer than durationS when it answered late)
 * @property {ServerCost | null} [serverCost] per delivered update: CPU in user and system time, frames in and out
 * @property {number | null} [lossPct]
 * @property {number | null} [ackLossPct]
 * @property {number | null} [dups]
 * @property {number | null} [reorders]
 * @property {number | null} [jitterMs]
 * @property {FreshnessFigures | null} [freshness] at the receivers (docs/architecture.md "Freshness")
 * @property {(SetupDelays & Record<string, unknown>) | null} [setupMs] other keys: further delay statistics ({@link SetupDelays})
 * @property {ChannelParams & { mixed?: ChannelParams[] } | null} [channel]
 *   `{ mixed: [...] }` when the clients' channels disagreed
 * @property {number} [connected] clients that joined
 * @property {Record<string, number | null>} [updates] sent, completed, ackTimeouts, skippedCycles, lateAcks, expected, received, lost
 * @property {Record<string, unknown> | null} [relay] the relay's counters over the measured window
 * @property {number | null} [durationS] measured window
 * @property {number | null} [serverRssBytes]
 * @property {boolean} [stoppedEarly]
 * @property {import('../sim/timeline.js').TimelineBucket[]} [timeline] RT and server memory per bucket (lab/sim/timeline.js)
 * @property {ReturnType<typeof import('../sim/timeline.js').stabilityOf>} [stability] RT drift and memory growth (lab/sim/timeline.js)
 * @property {number} [serverFaults] faults the server child reported (lab/sim/sim.js)
 * @property {{ atS: number, serverDownMs: number, note?: string }} [restart] the relay restarted mid-run (--restart-at)
 * @property {OutageFigures} [outage] clients that reconnected (lab/report/aggregate.js outageOf)
 * @property {{ links: number[], movingPerGroup: number, movingClients: number,
 *   events: import('../net/event-player.js').PlayedEvent[] }} [netEvents] --net-events: what was played on
 *   the moving members' links (their numbers in the point's network), when (lab/report/recovery.js netEventsFields)
 * @property {ReturnType<typeof import('./recovery.js').recoveryRecord>} [recovery] --net-events: recovery per event,
 *   loss during the events and outside them (lab/report/recovery.js; docs/architecture.md "Recovery")
 * @property {ClusterFigures | null} [cluster] runs on several relays joined through NATS (lab/target/cluster.js)
 * @property {FailoverFigures | null} [failover] a relay killed mid-run (lab/target/cluster.js)
 * @property {Record<string, any>} [scene] the shared scene's measures (lab/report/scene-record.js for sim
 *   and bench, lab/report/recording-scene.js for a study recording)
 * @property {number | null} [peersPerPage] bench: client peers per browser page
 * @property {import('./saturation.js').SaturatedFlag | null} [saturated] sim and bench: the load generators used about
 *   all the CPU the machine left them (lab/report/saturation.js: the rule and the figures it read); null when not
 * @property {import('./saturation.js').UnsettledFlag | null} [unsettled] sim and bench: loss was counted with more than
 *   a few cycles' worth still in flight (lab/report/saturation.js); null when not or when the run cannot tell
 * @property {string} [experiment] `carlab browsers`: the experiment (lab/browsers/)
 * @property {string} [pair] `carlab browsers`: the browser pair, e.g. `C-F`
 * @property {string} [error] why the run failed (the runners keep the point and its error)
 * @property {number} [reportsIntervalS] sim/bench --reports: seconds between client reports, 0 when off
 * @property {{ sent: number, failed: number, skipped?: number, failedBy?: Record<string, number> }} [reports] what the
 *   clients' reports did (with reports on; lab/report/tallies.js ReportTally): sent, not accepted (failedBy: HTTP status or
 *   'network', 'timeout', 'beacon'), skipped (the server would have refused them as too frequent)
 * @property {string} [source] where the run comes from: 'recording' (lab/report/recording-results.js), or in a
 *   combined report (`carlab report A B --out C`) the results folder's name
 * @property {string} [sourceName] the recording's (or, combined, the input folder's) name
 * @property {string} [groupName] a recording's working group, by name (`group` is its size)
 * @property {string} [family] a recording run of one browser family (lab/report/recording-results.js)
 * @property {string[]} [families] a recording run over every family of its group: the families
 * @property {number} [sessions] a recording run's page sessions
 * @property {{ fps: number | null, msPerFrame: number | null, visiblePct: number | null, clients: number } | null} [tracking]
 *   AR.js tracking the phones reported (a recording), or the bench's tracking page (--tracking)
 * @property {ReturnType<typeof import("../../core/report.js").summarizePlayout>} [playout] how the phones drew their neighbours (a recording)
 * @property {number} [cpuSlowdown] bench --cpu-slowdown: the Chromium pages' CPU throttle
 * @property {string[]} [cpuThrottled] the fleet's browsers that ran at cpuSlowdown
 * @property {string[]} [cpuUnthrottled] the fleet's browsers that cannot be throttled (full speed)
 * @property {Record<string, number>} [effectiveTypes] sessions per navigator.connection.effectiveType
 * @property {{ clientsReconnected: number, reconnects: number, outageMs: number }} [connection] a recording's reconnects
 * @property {string | null} [firstSeen] a recording run's first report (ISO, server clock)
 * @property {string | null} [lastSeen] its last report
 */

/**
 * A recording's summary in results.json (lab/report/recording-results.js recordingToResults).
 *
 * @typedef {object} RecordingInfo
 * @property {string} name the folder's name
 * @property {string} [dir]
 * @property {number} [sessions]
 * @property {{ file: string }[]} [segments]
 * @property {string | null} [firstAt]
 * @property {string | null} [lastAt]
 * @property {Record<string, number>} [counts] lines, reports, tornLines, invalid, other, superseded, idCollisions
 */

/**
 * @typedef {object} Results
 * @property {Record<string, unknown>} [env]
 * @property {Run[]} runs
 * @property {import('./recording-results.js').DeviceRow[]} [devices] a recording's page sessions
 * @property {RecordingInfo} [recording] results of one recording
 * @property {RecordingInfo[]} [recordings] a combined report: every recording among its inputs
 */

/**
 * What one delivered update cost the server (lab/report/aggregate.js serverCostOf).
 * @typedef {object} ServerCost
 * @property {number | null} usPerUpdate CPU µs, as serverCpuUsPerUpdate
 * @property {number | null} userUsPerUpdate of it, user time (null: no split measured)
 * @property {number | null} systemUsPerUpdate of it, system time
 * @property {number | null} framesInPerUpdate WebSocket / data channel frames read per delivered update
 * @property {number | null} framesOutPerUpdate frames written per delivered update
 */

/**
 * @typedef {object} RunTable one table of the CAR layout
 * @property {string} transport
 * @property {number | null} group
 * @property {number | null} cycleMs
 * @property {string} title e.g. `relay · group 25 · cycle 167 ms`
 * @property {Run[]} runs sorted by clients
 */

/**
 * @typedef {object} Supported the supported population of one transport x group x cycle
 * @property {string} transport
 * @property {number | null} group
 * @property {number | null} cycleMs
 * @property {string | null} [net] network profile (--net)
 * @property {string | null} [cycleMode] action cycle mode, when the runs say
 * @property {string | null} [reports] client reports, when the runs had them ({@link reportsLabel})
 * @property {boolean} unreliable whether loss counts too
 * @property {number | null} supported largest client count whose runs all pass, null if none
 * @property {number | null} smallest smallest client count tested
 * @property {number | null} largest largest client count tested
 * @property {string} label `supported`, or `< smallest` when none passes (`–` when nothing was tested)
 */
