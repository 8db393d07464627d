r"""Fleet planning: one procurement -- servers already owned, servers bought, servers rented -- for a portfolio.

What is modelled, stated honestly
---------------------------------
* Time is cut into slots of ``slot_hours`` (default a week). A job runs in one *mode*
  m = (pool, fabric, power cap, node count) and never changes size, mode or pool: it may pause between slots
  but resumes on the same nodes. (If jobs could resize, a mode would become a per-slot choice: the work row
  would sum per-slot progress 1/d_m over the slots of each size, the node rows would take the size of that
  slot, and the job would need a checkpoint/restart term per resize; the per-job one-hot below would become
  one per job and slot, about |slots| times the binaries.)
* Pools. A *site cluster* is one server type on one fabric at the site: the nodes a team already owns on that
  fabric plus any bought on it. Each server type is bought on **one** fabric, chosen by the plan (y_pf); NIC,
  switch and cable counts and prices follow from that choice and the cluster's total node count exactly as in
  planner/physics/cost.py (one switch, two-tier leaf/spine, or three-tier fat tree). Bought nodes that pick the
  fabric of owned nodes of their type extend that cluster (one network, jobs may span both); otherwise they
  form a cluster of their own. Owned switches are reused: the plan pays the switches, cables and NICs that
  the grown cluster needs beyond what the owned nodes already have (capex(owned + added) - capex(owned)).
  **Pools do not share a network with each other**: different server types (and rentals) are separate
  clusters joined by no fabric, so a job runs inside one cluster -- the exact model evaluates one server
  type per job, and a cross-cluster job would need a heterogeneous-training model we do not have.
* Rentals are the provider's clusters: a rental pool per rentable server type, on the offer's network (the
  server's first listed fabric), at the offer's power cap (1.0 where the cap is not settable). Rent includes
  power and network and is billed in whole periods of the offer (hour / day / month). An offer whose period
  divides the slot (hourly; daily with weekly slots) is billed per job (``billed_per_job``): the job rents
  its own nodes and pays ceil(T / period) periods per node, the single-job rule of planner/physics/cost.py (it runs
  its full slots first, so only its last period is partly used) -- not the whole slot. Otherwise billing
  periods run from the start of the horizon, and a node rented in any slot that overlaps a period pays that
  whole period (its nodes may serve several jobs, one after another). Rented nodes
  draw the provider's power: their jobs' energy counts in the energy and carbon objectives but not against
  the site's power envelope.
* Owned servers (type, count, fabric, age) cost no capex. They serve until they reach ``life_years`` of age
  (or their own ``retire_at_age_years``) and may be retired at the start: a kept node draws idle power in
  every slot it is in service and not training. Bought nodes draw idle power over the whole horizon too.
  Energy at the site = idle power x hours of every powered node + what each job draws above idle while it
  trains (its exact-model energy minus its nodes' idle energy over its training hours).
* Modes come from the exact model (``planner.physics.model.evaluate_space``) at **every** integer node count from 1
  to the pool's limit (``max_nodes`` per cluster plus the owned nodes on that fabric) -- so every count at
  which some layout fits and is valid (multiples of the tensor x pipeline group, batch divisibility) is
  seen -- then pruned exactly: a mode of one job, pool and fabric is dropped when another has no more nodes,
  no more slots ceil(T/H), no more energy, no more site power and, on a rental offer billed per job, no more
  rent (the coefficients it enters the MIP with).
  Any schedule of the dominated mode is feasible for the dominating one and no worse in any term (capacity,
  power per slot, energy, rent), so the optimum is unchanged. Pruning is done once per distinct
  (workload, work) and a job then keeps the survivors that fit its window (a dominating mode needs no more
  slots, so it fits whenever the dominated one does). A one-node mode of a type without owned nodes is one
  mode on "any" fabric: one node has no NICs, switches or inter-node traffic in the exact model, so its time,
  power and energy are the same on every fabric, and it runs on whatever fabric its type is bought on.
  Where the mode stage's time goes (``python bench/bench_fleet.py --profile-modes``, 50 jobs, one run each on a
  shared machine, load ~4): 21.3 s before session 9 -- ``evaluate_space`` 16.4 s, dominance pruning 3.2 s, the
  rest of ``job_modes`` 1.8 s -- and 18.8 s after (17.2 / 0.9 / 0.6 s): the configurations are handed over as
  one integer-coded ``Space`` built once (not a table of strings re-coded per call), string columns are
  converted only for the surviving rows, and ``pareto_mask`` compares each row with its slot count's
  fewest-node mode before a sweep (same modes, checked frame for frame). The rest is ``evaluate_space``, each
  call over all 540,672 (type, fabric, cap, nodes) configurations: since session 10 one call per (workload,
  precision), not one per distinct amount of work (ten at 50 jobs, now seven): the other amounts of work of
  that workload are the evaluated table scaled (``planner.physics.model.scale_work``: hours, energy and samples are
  proportional to the samples to train and the priced columns follow; the property is model.py's, and
  tests/physics/test_space_properties.py compares it with a fresh evaluation column for column, so a per-run cost added
  to the physics fails there and not silently here); each evaluated table is let go after its last use. Same
  52,472 modes at 50 jobs, equal but for rounding (time and energy within 6e-16 relative). The mode stage in a
  fresh process (the first line of ``bench_fleet.py --profile-modes``, run at 532a45a and after, alternated
  three times each, load ~1.5-1.9): 11.3-11.7 s before, 8.2-8.4 s after (ratio ~0.72, as 7 calls of 10 would
  give); peak RSS of ``job_modes`` 2,481 MiB before, 2,516 MiB after (review 10 measured 2,730 MiB while every
  evaluated table was kept to the end).
* Solving: coefficients below 1e-7 are written as 0 (they change no plan but can mislead presolve), an
  infeasibility claim is confirmed without presolve, and HiGHS starts from a greedy plan (``set_greedy_start``).
  The time limit is the whole call's: mode generation, the Pyomo build, the start heuristics and HiGHS all
  come out of it (EXTRACT_RESERVE_S is kept for reading the plan back; each solve gets at least 1 s, so a limit
  shorter than the modes and build take is overrun by those, and the plan may then be the greedy start alone,
  bound 0: the LP relaxation gets no time to finish); an infeasible fleet's explanation (``_explain``) re-solves
  within what is left of it too and says when it was cut short. From RESTRICTED_START_MODES modes on, the start
  is improved first (``restricted_start``): the LP relaxation is solved, then the MIP restricted to the modes it
  uses (and the greedy plan's), with RESTRICTED_SHARE of the time then left; a local search moves single jobs
  to the mode and slots that lower their cluster's peak (``flatten_start``, within FLATTEN_SHARE of the time
  then left); then, of the time left after these (``improve_start``), the most expensive bought
  type is squeezed by one node (``squeeze_start``: a MIP over a mode subset with N_p <= n - 1, in which the
  jobs that shared those nodes run one after another; SQUEEZE_SHARE of that time); last, every job is packed
  onto one bought cluster of as few nodes as a repair search fits them into (``pack_start``, PACK_SHARE of that
  time, kept for it; it ends early once no option's bound is below the plan in hand), which replaces the start
  when cheaper. When its repair search fails one node below the best packing's cluster, pack_start asks HiGHS
  once whether any packing exists there (``cluster_fits``, an exact time-indexed MIP, at most PROOF_S, not with
  less than PROOF_MIN_S left): a proof that none does ends that option, and when the plan returned is that
  cluster alone it says so (``FleetPlan.proofs``: the size is the fewest of its type and fabric, and every plan
  running all jobs on one such cluster is worth at least its value at that size plus each job's least energy).
  At 50 jobs (bench_fleet.py's instance, load ~1): pack_start given 12 s asks at 31 nodes of type-24 on hdr200
  (undecided in 3 s) and proves 28 of type-10 on hdr200 infeasible in 2.7 s, so the 29-node plan ($2,302,183) is
  within 0.8% of every plan on that option (bound $2,284,791); within the 60 s call pack's share was 8.2-8.4 s
  in two runs, too short for the second question: the same plan and gap (9.11%, 59.9 s), no proof said. Each of
  these plans is a plan of the full MIP, which HiGHS then solves from the best within the rest of the limit
  (without HiGHS presolve when less than FULL_PRESOLVE_MIN_S is left). The full model is compiled to HiGHS's
  arrays once (solver.py, ``reuse_compiled``) for the LP relaxation, the restricted MIP (its other z fixed at 0
  as bounds) and the full MIP. From ISOLATE_MODES modes on, HiGHS solves the full MIP in a child process that is killed
  (SIGKILL) when it has not answered ISOLATE_GRACE_S after the limit (solver.py, ``isolate``), so the call's
  limit holds even where HiGHS ignores its interrupt (measured (viii)); the plan is then the best start
  (``_start_as_answer``: the incumbent HiGHS held from its first moment), status time_limit, re-checked by
  ``_extract`` like any plan. The child starts a fresh interpreter (about 1 s of the limit). Status and
  incumbent are HiGHS's own on the full MIP; the bound is HiGHS's, or the LP relaxation's optimum of the same
  full MIP (solved first, a valid lower bound) when that is higher -- HiGHS, started late, may not finish its
  root LP -- and the gap is computed from that bound.

Sets
----
J jobs; T slots; W_j slots job j may run in (release..due, or ..horizon end when lateness is allowed with a
penalty); P server types; F_p fabrics type p may be bought on; E owned entries (type p_e, fabric f_e);
G capacity groups: (p, f) per fabric for types that own nodes, (p, *) for the rest (one fabric is bought
anyway), (p, rent) per rental offer; P^job rental offers billed per job (billed_per_job); M_jg modes of job j
in group g; B_p billing blocks of offer p (runs of billing periods that overlap the same slots; c_b periods each).

Variables
---------
z_m in {0,1} job runs in mode m;              r_jt in {0,1} job j runs in slot t (t in W_j)
a_jg >= 0   nodes job j takes in group g;     u_jgt >= 0 nodes of group g held by job j in slot t
y_pf in {0,1} type p is bought on fabric f;   N_pf in Z>=0 nodes of type p bought on fabric f
K_e in Z    owned nodes kept (0..count_e);    R_pt, V_pb in Z>=0 nodes rented in slot t / billing block b
                                              (offers p not in P^job)
q_jt >= 0   site power of job j above idle;   late_j >= 0 slots job j finishes after its due slot
per buy option (p, f): multi, tier2, tier3 in {0,1}; L (leaves/edge), S (spines/core), A (aggregation),
W (switches) in Z>=0; X1, X2, X3 >= 0 (= cluster nodes when multi / tier2 / tier3)

Constraints (one function each)
-------------------------------
(1) one mode       sum_m z_jm = 1
(2) work           sum_{t in W_j} r_jt >= sum_m d_m z_jm                   (d_m = ceil(T_m / H) slots)
(3) nodes          a_jg = sum_{m in M_jg} n_m z_m
(4) held           u_jgt >= a_jg - n^max_jg (1 - r_jt)                      (big-M from the data)
(5) capacity       sum_j u_jgt <= sum_{f in g} N_pf + sum_{e in g} avail_et K_e   (site)  |  <= R_pt (rent);
                   none for offers billed per job (each job rents its own nodes)
(6) fabric         sum_f y_pf <= 1;  N_pf <= n^max_p y_pf;  sum_{m in M_j, fabric f} z_m <= y_pf
                   (for fabrics without owned nodes of p)
(7) power          q_jt >= sum_m dP_m z_m - dP^max_j (1 - r_jt);
                   sum_j q_jt + sum_p P^idle_p (sum_f N_pf + sum_e avail_et K_e) <= P_env
(8) switches       with n = O_pf + N_pf (O = owned nodes on that fabric), ports k_p, radix R_f:
                   n <= 1 + n^max multi;  k n <= R + M tier2;  2 k n <= R^2 + M tier3;  tier3 <= tier2 <= multi;
                   R L >= 2 k n - M (1 - tier2);  2 S >= L;  A >= L - M (1 - tier3);  W >= multi;
                   W >= L + S + A;  X_i >= n - n^max (1 - bin_i)
                   capex_pf = price N + k nic X1 + cable k (X1 + X2 + X3) + switch W - capex(O)  (cost.py)
(9) billing        V_pb >= R_pt for every slot t overlapping block b;
                   rent = sum_pb c_b price_p V_pb + sum_{m on p in P^job} n_m ceil(T_m / period_p) price_p z_m
(10) budget        sum capex_pf + rent <= B
(11) lateness      late_j >= (t - due_j) r_jt  for t > due_j   (only when a penalty is given)
(12) valid cuts    a_jg <= sum_{f in g} N_pf + sum_{e in g} K_e  (site);  node-slots: sum_t capacity_gt >=
                   sum_{m in g} n_m d_m z_m; fabric order tier3 <= tier2 <= multi      (tighten the LP bound)
(13) energetic     for intervals I = [a, b] (a a window start, b a window end) and groups g (with (5)):
                   sum_j e_{j,g,|W_j \ I|} <= sum_{t in I} capacity_gt,
                   e_jgo >= sum_{m in M_jg} n_m max(0, d_m - o) z_m       (a job runs >= d_m - |W_j \ I| slots in I)
(14) network       NIC + cable + switch capex of (p, f) >= a (O_pf + N_pf) + b for every line of the lower convex
                   envelope of that capex over the cluster sizes (b y_pf in place of b when O_pf = 0)
(15) fabric cover  sum_{m of j on (p, f), n_m >= 2} n_m z_m <= N_pf        (types without owned nodes)
                   (12)-(15) cut off no integer solution; each function's docstring says why.
                   Measured on bench_fleet.py (50 jobs) and not kept: pair covers N_p >= sum_{m in A_i} n_m z_m +
                   sum_{m in A_j} n_m z_m for two jobs whose chosen modes must overlap in an interval (valid,
                   16,878 rows: root LP bound $2,539,917 -> $2,539,920). The LP's gap to the plans is its
                   fractional purchase of many pools and the time-spread use of their nodes: with the purchase
                   fixed at a plan's, LP $2.97M against MIP $3.09M; over all purchases $2.54M.
                   Branching on the nodes bought per type outside HiGHS (planner/fleet/bound.py, a valid bound:
                   best-first over N_p <= floor / >= ceil on the LP relaxation, leaves optionally solved as MIPs)
                   is not used here: on bench_fleet.py it moves the bound $3,058,187 -> $3,058,541 in 60 s at 50
                   jobs (18 LPs; $2,539,922 -> $2,549,215 before the physics update bc08729) and $1,283,107 ->
                   $1,285,939 in 30 s at 20 jobs, where HiGHS's own bound reaches $1,307,544. Even run to the
                   end the purchase branches leave a gap (bench instance at 10 jobs x 8 types x 12 slots, nodes
                   <= 64, older physics: root LP $465,955, complete search $471,548, optimum $505,634): the LP
                   is weak in the schedule too, once the purchase is integral.
                   Measured on bench_fleet.py (50 jobs, physics of bc08729) and not kept: (i) one auxiliary
                   variable per job for its mode's power (q_jt >= P_j - ...) and per (job, group, slot count) for
                   its nodes (s_jgd, in (3), (12), (13)) -- the same LP (bound $3,058,187 both), nonzeros 1.50M ->
                   0.82M, build 7.1 -> 3.4 CPU s, but the dual simplex took 8,766 -> 28,192 iterations (4.4 ->
                   32.4 CPU s); (ii) reduced-cost fixing from the root LP with the incumbent $3,915,785: z_m = 0
                   where the LP's reduced cost exceeds incumbent - bound, and N_pf <= (incumbent - bound) / its
                   reduced cost (every plan of value <= the incumbent satisfies both, so the optimum stays), which
                   drops the modes on more nodes than their cluster may then have: 5,419 of 52,978 modes go, and
                   the LP of the reduced model is $3,058,187 again (the big-M rows of the modes left do not
                   tighten). (iii) HiGHS alone on the full MIP from the $3,915,785 start for 1,200 s (one thread,
                   presolve on, shared machine): still at its root node, incumbent unchanged, bound $3,084,244
                   (gap 21.2%); with a binary x_jp = sum of job j's z on type p added (to branch on), 300 s reach
                   $3,086,051 (without: $3,078,798 at 352 s), still at the root. The MIP over the LP's modes and
                   each job's 20 cheapest (1,028 modes) finds $3,830,617 in 150 s but its own bound is $3,233,116:
                   the schedule is hard even on a thousand modes. The plans' clusters are sized by single jobs:
                   the incumbent's 32 type-10 nodes are one 70B pre-training run whose 8-slot window admits no
                   mode under 32 nodes (mean use of those nodes over the year: 17.1), so lowering a cluster's cap
                   (all its jobs on fewer nodes for more slots) finds no plan; the LP spreads such a job over
                   several types (job-20: 1/3 on one GB200 NVL72 rack in a 3-rack mode, the rest on two types)
                   and shares each type's nodes with the other jobs over time.
                   Session 8 (physics of 283ecb7, bench_fleet.py, one run each, 2 shared cores): where the optimum
                   lies. 20 jobs: HiGHS alone (presolve on, one thread) from the squeezed start $975,997 proves
                   $967,830 optimal in 74 s (665 B&B nodes; presolve and its root restarts, fixing columns by
                   reduced cost, shrink 28,414 columns to 4,037): the plans were 0.8% off, the root LP
                   ($854,228) 11.7% -- the bound was the weak side. 50 jobs: the plans were weak too. The MIP
                   over the modes of type-10 alone with N <= 29 finds $2,302,714 in 90 s (N <= 27: infeasible,
                   proved in 3.9 s; N <= 28: no plan in 60 s; N <= 29 or 30: no plan in 20 s; N <= 32:
                   $2,520,079 in 20 s; all without a start), against $2,860,610
                   from fleet() -- a cluster sized for its busiest slot at 56% mean use. So ``pack_start`` packs
                   every job onto one cluster of as few nodes as a min-conflicts repair fits them into: $2,352,184
                   (32 x type-24 on hdr200) in 2.5 s; root LP $2,092,481 (29.07 nodes at 69% use, server capex
                   $1.68M against the plan's $1.85M, network $0.17M against $0.26M: its nodes and fabrics are
                   split over type-24 and type-10 and its network is the convex envelope), so the gap is now
                   mostly the bound's. Measured and not kept: (iv) restarting the repair at n - 1 nodes from the
                   n-node packing ($2,357,897, same 32 nodes); (v) a MIP over the packed cluster's 340 modes from
                   its plan, 20 s: no cheaper plan, its own bound $2,277,362; (vi) the MIP over all modes of the
                   three types the LP and plan use (5,073 modes, 240 s): $2,546,768, bound $2,107,459; (vii)
                   pack_start before the restricted MIP (so that the MIP and squeeze start from its plan): 50
                   jobs the same plan, 20 jobs worse ($1,019,039, gap 14.5%: squeezed from the packed plan nothing
                   is found, from the restricted MIP's plan $975,997); (viii) HiGHS options against the full MIP's
                   uninterruptible root phase after its first cut round (50 jobs, a 25 s limit ran 44-53 s):
                   mip_heuristic_effort 0, mip_detect_symmetry off, no restart, pseudo-cost reliability 0, no
                   root reduced-cost heuristic and no feasibility jump all still ran 42-46 s; the full MIP only
                   gets the time the start heuristics leave (4 s at 50 jobs), where it stays in its root LP;
                   since session 9 it runs in a child process killed at the limit (``isolate``, "Solving"):
                   ``bench_fleet.py --no-root --time-limit 120``, one run each (load ~2-3), the call took 169.7 s
                   with HiGHS in this process (HiGHS 72.4 s where ~24 s were left; its bound $2,103,724, gap
                   10.77%) and 119.8 s isolated (killed at 24.4 s; the packed start $2,357,646 with the LP's
                   bound, gap 11.25%) -- the limit holds, and the overrun's bound gain is given up. Again with
                   the child started by ``python -c`` (e0d26d5, load ~3): 119.9 s, killed at 15.7 s, the same.
                   What the 50-job bound lacks (LP relaxations, not kept): fixing the fabric of type-10 and
                   type-24 (hdr200 / ndr400 each) lifts the root LP $2,092,481 -> $2,113,770-$2,149,691, one type
                   alone (type-10 or type-24 on hdr200, the other not bought) $2,140,630 / $2,142,467; the LP
                   then spreads over type-27 and type-09. On type-24 / hdr200 alone the LP buys 29.39 nodes
                   ($2,159,419); 199 pair covers (two jobs whose windows force their runs to overlap need both
                   their node counts at once) add $66, while HiGHS proves 29 nodes infeasible there in 1.4 s and
                   packing needs 32: the fluid schedule of one cluster is the bulk of the gap, and cuts on pairs
                   of jobs do not reach it.
                   Session 10 (bench_fleet.py --no-root, one run each, 2 shared cores; load in brackets): a cheaper
                   incumbent at 50 jobs. Before: the restricted MIP (55% of the time after the LP) 22.2 s ->
                   $2,775,437, squeeze 9.0 s (0 steps), pack 2.2 s -> $2,357,646 (32 x type-24 on hdr200), gap
                   11.25%. After: RESTRICTED_SHARE 0.3 (the MIP gets 10 s at 50 jobs, $2,922,571; at 20 jobs it
                   ends in 1.4 s either way), squeeze and pack shares of the time left after it (0.5 / 0.4; the
                   20-job squeeze needs ~20 s: its third MIP finds $975,997 only after 13-20 s), pack_start ranked
                   by a lower bound, packing every option once before searching the best again, with breakout
                   weights and pair moves: 50 jobs $2,302,183 (29 x type-10 on hdr200; pack 8.8 s), bound
                   $2,092,481, gap 9.11%, 59.8 s (load 2.4-3.7; again at load 1.7-2.7: the same plan, pack 9.1 s --
                   it finds the 29 nodes ~4 s in, then retries 28 and type-24 at 31 until its share ends); 20 jobs
                   $967,830 (HiGHS from the squeezed
                   $975,997 within its 16.7 s), gap 8.82%, 59.2 s (load 2.7-3.7; before: $975,997, 9.58%); 35
                   jobs (--jobs 35, load 2.9-3.1) $1,915,010 (26 x type-24/hdr200, gap 10.17%) -> $1,891,704 (24 x
                   type-10/hdr200, gap 9.06%), 59.9 / 59.7 s.
                   Measured on the way and not kept: (ix) the single-cluster MIP in a time-indexed form (y_kt = mode
                   k runs in slot t, y_kt <= z_k, sum_t y_kt = d_k z_k, sum n_k y_kt <= C; 3,317-3,487 columns,
                   highspy, minimising C's cost + energy), 20 s per option: C = 34 on type-24/hdr200 and 31 on
                   type-10/hdr200 (bound $1.99M), worse than the repair search in 1 s. With C fixed (objective
                   energy) it proves sizes infeasible fast: type-24/hdr200 at 30 in 0.4 s, type-10/hdr200 at 28 in
                   1.0 s, type-10/roce100 at 30 / 31 in 0.1 / 12.4 s, type-24/roce100 at 32 / 33 in 0.2 / 0.6 s --
                   so the packed 29 nodes are the fewest type-10 on hdr200 can run every job on, and that option's
                   plans are >= $2,287,221 (cluster $2,161,599 + its energy bound at C = 29, $125,622, 20 s): the
                   packed plan is within 0.7% of them -- but it finds no plan at a size it has not proved (C = 29
                   on type-10/hdr200, 31 on type-24/hdr200: none in 20-25 s), and with the 45 jobs of at most 3
                   node-slots left out, type-10/hdr200 at 28 is still undecided in 15 s (with only the five 70B
                   runs: a plan at once), so moving small jobs to a second cluster would have to move the 4-node
                   fine-tunes too, paying a cluster of >= 4 nodes to save one; (x) 40,000 single repair
                   moves per size instead of 4,000: the same sizes (32 on type-24/hdr200, 30 on type-10/hdr200);
                   (xi) more retries per size (8, the cheapest option first): the time went on type-24 at 31 and
                   the plan was 32 nodes again -- the retries now go round the options; (xii) the time-indexed MIP
                   at C = 29 on type-10/hdr200 started from the packing, minimising energy: 5 s, the start's energy
                   ($140,584) unchanged, bound $125,432.
                   Session 10, the bound (one run each, load ~2-3): (xiii) HiGHS alone on the full MIP (presolve
                   on, one thread, ``bench_fleet.py --no-root --long``) from the 32-node packed start: 400 s, bound
                   $2,105,964 (gap 10.68%), 2 B&B nodes; from the 29-node packed start $2,302,183: 300 s, bound
                   $2,107,020 (8.48%), 35 B&B nodes -- both still in root cut rounds and restarts. At 20 jobs the
                   same from the squeezed $975,997: optimal ($967,830) in 99 s, 665 B&B nodes, gap 7.8% at 68 s
                   and 3.8% at 95 s -- so not 1% within a 60 s call at 20 jobs either. (xiv) Two relaxations as
                   bounds (``bench/bench_fleet_relaxations.py``, its docstring states them): the peak of the sum
                   (one resource in dollars shared by every type, 1,402 columns) reaches $2,049,797 in 60 s, and
                   the job subsets (the 5 / 10 jobs of most node-slots, solved by ``fleet``, plus the dropped
                   jobs' least energy) $1,979,922 / $2,062,706 -- all below the LP's $2,092,481. (xv, reasoned, not
                   run) A Lagrangian over the one-mode rows (1) with the LP's duals: each type's subproblem has linear
                   node prices (only the network intercepts are fixed costs), so at those duals its integer
                   optimum is ~0 as its LP's is, and the bound moves only with column generation (branch-and-price,
                   one pricing MIP -- a single-cluster schedule -- per type and round).

Objective
---------
site energy = sum_{m site} (E_m - n_m P^idle T_m) z_m + H P^idle (|T| sum_f N_pf + sum_e |avail_e| K_e);
energy = site energy + sum_{m rent} E_m z_m;  carbon = intensity x energy;
cost = sum capex_pf x horizon / life + site energy x price + rent;  plus sum_j penalty_j late_j.
A 1e-6 tie-break prefers early slots. HiGHS gets the MIP through planner/solver/highs.py; the plan is re-derived
from the chosen modes and slots with planner/physics/cost.py and reported with the exact-model figures of each mode.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyomo.environ as pyo
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from planner.data import Catalog, Precision, Server, load_catalog
from planner.errors import PlannerInputError, describe_validation_error
from planner.formatting import OBJECTIVE_UNITS_TEXT, objective_text, precision_caveat, sig4, slot_ranges, switches_text
from planner.physics import Space, Work, check_catalog, compute, evaluate_space, scale_work, validated, work_from
from planner.physics import cost as cost_mod
from planner.physics import power as power_mod
from planner.solver import (
    Solved,
    SolverOptions,
    SolverReport,
    SolverStatus,
    current_solution,
    process_threads,
    solve_model,
)

DEFAULT_MAX_NODES = 2048
SLOT_EPS = 1e-9  # a run of exactly k slots (up to rounding) needs k, not k + 1
CUT_FAMILIES = ("cover", "energetic", "network", "fabric_cover")  # valid inequalities (12)-(15)
RESTRICTED_START_MODES = 2000  # from this many modes on, the start comes from a restricted MIP (restricted_start)
ISOLATE_MODES = 2000  # from this many modes on, the full MIP's HiGHS runs in a child process killed at the limit
FULL_PRESOLVE_MIN_S = 120.0  # after a restricted start, the full MIP is presolved only with this much time left
RESTRICTED_SUPPORT = 0.02  # modes the LP relaxation uses at least this much enter the restricted MIP
SQUEEZE_TOP_MODES = 20  # each job's cheapest modes (standalone estimate) in the squeeze MIP (squeeze_start)
RESTRICTED_SHARE = 0.3  # share of the time left after the LP relaxation for the restricted MIP (restricted_start)
FLATTEN_SHARE = 0.1  # most of the time left that flatten_start may take (it usually ends in a second)
SQUEEZE_SHARE = 0.5  # share of the time left after the restricted MIP and flatten_start for squeeze_start
PACK_SHARE = 0.4  # share of that time kept for pack_start (the full MIP gets the rest and what pack leaves)
PACK_OPTIONS = 12  # (type, fabric) options pack_start packs at most, cheapest first by a lower bound on their plans
PACK_ITERS = 400  # repair moves pack_start tries per cluster size while it gallops up from its size bound
PACK_REFINE_ITERS = 4000  # repair moves per size below the first size that packed
PACK_RETRIES = 8  # fresh repair searches at one size below an option's packing before it is given up
PACK_NOISE = 0.15  # share of repair moves that place the job in a random mode (leaves local minima)
PACK_PAIR = 0.3  # share of repair moves that take out two jobs busy in one overloaded slot and place both again
PROOF_S = 3.0  # most seconds of HiGHS for one cluster-size question of pack_start (cluster_fits)
PROOF_MIN_S = 1.0  # pack_start asks no cluster-size question with less time left (its build is outside HiGHS's limit)
EXTRACT_RESERVE_S = 1.0  # seconds of the time limit kept for reading the plan back after HiGHS
EXPLAIN_MIN_S = 1.0  # an infeasible fleet's explanation tries no relaxation with less of the time limit left
ANY_FABRIC = "any"  # a one-node mode: runs on a bought node of its type whatever fabric the type is bought on


class Job(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    model: str
    samples: float | None = Field(None, gt=0)
    tokens: float | None = Field(None, gt=0)
    epochs: float | None = Field(None, gt=0)
    release_slot: int = Field(0, ge=0, description="first slot the job may run in")
    due_slot: int = Field(ge=0, description="last slot the job may run in (inclusive)")
    penalty_usd_per_slot: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="if set, the job may finish late at this price"
    )
    precision: Precision | None = Field(
        None,
        description="compute precision (default: the workload's); fp8 / fp4 run in the next precision a pool's GPU "
        "has (fp4 in fp8, fp8 in bf16), and asking for one no allowed GPU has is an error",
    )

    @model_validator(mode="after")
    def _window(self) -> Job:
        if self.due_slot < self.release_slot:
            raise ValueError(
                f"due_slot ({self.due_slot}) must not be before release_slot ({self.release_slot}): the job may "
                f"run from its release slot to its due slot, both included"
            )
        return self


class Owned(BaseModel):
    """Servers the team already has: no capex; they draw idle power while kept and may be retired."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    server: str
    count: int = Field(ge=1, le=100_000)
    fabric: str | None = Field(None, description="fabric they are cabled to (default: the server's first)")
    age_years: float = Field(0.0, ge=0, description="age at the start of the horizon, years")
    retire_at_age_years: float | None = Field(
        None, gt=0, description="end of service, years of age (default: the request's life_years)"
    )


class FleetRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    jobs: list[Job] = Field(min_length=1)
    slots: int = Field(ge=1, le=520)
    slot_hours: float = Field(168.0, gt=0)
    site: str = "us-colo"
    objective: Literal["cost", "energy", "carbon"] = "cost"
    purchase: Literal["buy", "rent", "either", "none"] = Field(
        "buy", description="what may be added to the owned servers: buy, rent, either (both) or none"
    )
    owned: list[Owned] = Field(default_factory=list, description="servers already owned (no capex)")
    budget_usd: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="capex of what is bought plus all rent, USD (leave out: none)"
    )
    power_kw: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="facility power per slot (default: the site's envelope)"
    )
    gpus: list[str] | None = Field(
        None,
        description="GPUs new servers may be bought or rented with (ids, families or id starts; default: any). "
        "Owned servers serve whatever their GPU: a fleet runs on what the team has (a single-job solve, in "
        "contrast, plans only on the allowed GPUs and leaves owned servers outside them unused)",
    )
    servers: list[str] | None = Field(
        None, description="server types new servers may be bought or rented as (default: any); owned ones serve"
    )
    fabrics: list[str] | None = Field(None, description="fabrics new servers may be bought on (default: any)")
    power_caps: list[float] = Field(default_factory=lambda: [0.7, 1.0])
    max_nodes: int = Field(DEFAULT_MAX_NODES, ge=1, le=100_000, description="most nodes bought or rented per pool")
    node_counts: list[int] | None = Field(
        None, description="evaluate only these node counts (default: every count 1..max_nodes, exact)"
    )
    life_years: float = Field(4.0, gt=0)
    solver: SolverOptions = Field(
        default_factory=lambda: SolverOptions(time_limit_s=60.0, mip_rel_gap=1e-4, presolve=True)
    )

    @model_validator(mode="after")
    def _jobs(self) -> FleetRequest:
        ids = [j.id for j in self.jobs]
        if len(set(ids)) != len(ids):
            raise ValueError("job ids must be unique")
        for j in self.jobs:
            if j.release_slot >= self.slots:
                raise ValueError(
                    f"job {j.id}: release_slot {j.release_slot} is beyond the horizon of {self.slots} slots"
                )
            if j.due_slot >= self.slots:  # was read silently as the horizon end
                raise ValueError(
                    f"job {j.id}: due_slot {j.due_slot} is beyond the horizon of {self.slots} slots (the last is "
                    f"slot {self.slots - 1}): set due_slot to at most {self.slots - 1}, or plan more slots"
                )
        if self.purchase == "none" and not self.owned:
            raise ValueError("purchase 'none' plans on owned servers only: list them under 'owned'")
        if any(not (0 < c <= 1) for c in self.power_caps) or not self.power_caps:
            raise ValueError("power caps are fractions of TDP in (0, 1]")
        if self.node_counts is not None and any(n < 1 for n in self.node_counts):
            raise ValueError("node_counts must be positive")
        horizon_years = self.slots * self.slot_hours / cost_mod.HOURS_PER_YEAR
        if self.purchase in ("buy", "either") and horizon_years > self.life_years * (1 + 1e-9):
            # servers are bought at the start and serve life_years: past it they are retired, and their hardware
            # share (capex x horizon / life) would exceed what they cost -- the single-job rule (optimize.in_service)
            raise ValueError(
                f"the horizon ({self.slots} slots x {self.slot_hours:g} h = {horizon_years:.2f} years) is longer than "
                f"the {self.life_years:g}-year service life of the servers it buys: plan at most "
                f"{math.floor(self.life_years * cost_mod.HOURS_PER_YEAR / self.slot_hours)} slots, or set life_years"
            )
        return self


class FleetPlan(BaseModel):
    """What ``fleet`` returns: ``status`` ('optimal', 'time_limit', 'infeasible' or 'no_solution'), the
    ``objective`` and its value (``objective_value``, in textfmt.OBJECTIVE_UNITS_TEXT; None without a plan), what
    is kept, bought and rented per server type and fabric (``purchases``), each job's pool, mode and the slots it
    runs in (``assignments``; ``slots`` a list of slot numbers), facility power per slot and pool (``schedule``),
    the money and energy ``totals``, HiGHS's report (``solver``: its bound and gap) and, without a plan, the
    ``explanation``. ``summary()`` is text; the ``*_frame()`` methods are tables that round-trip through CSV."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    status: str
    objective: str
    objective_value: float | None
    purchases: list[dict[str, Any]]
    assignments: list[dict[str, Any]]
    schedule: list[dict[str, Any]]
    totals: dict[str, float]
    solver: SolverReport | None
    explanation: str | None = None
    timings_s: dict[str, float] = Field(default_factory=dict)
    start: dict[str, float] = Field(
        default_factory=dict, description="figures of the start heuristic (restricted_start), when it ran"
    )
    proofs: list[str] = Field(
        default_factory=list,
        description="what the planner proved of this plan beyond HiGHS's bound (pack_start: its cluster's size)",
    )

    def purchase_frame(self) -> pd.DataFrame:
        """One row per server type and fabric kept, bought or rented (``purchases``)."""
        return pd.DataFrame(self.purchases)

    def assignment_frame(self) -> pd.DataFrame:
        """One row per job (``assignments``), every cell a scalar so that the table round-trips through CSV:
        ``slots`` is the slots the job runs in as text, consecutive slots as 'first-last' and runs joined by
        commas in ascending order ('3-9,12' is slots 3 to 9 and 12; ``planner.formatting.parse_slot_ranges``
        reads it
        back into the list), beside ``first_slot``, ``last_slot`` and ``slots_run`` (how many slots it runs in;
        it may pause between slots)."""
        rows = [
            {**a, "slots": slot_ranges(a["slots"]), "slots_run": len(a["slots"])} if "slots" in a else a
            for a in self.assignments
        ]
        return pd.DataFrame(rows)

    def schedule_frame(self) -> pd.DataFrame:
        """One row per slot and pool in use: nodes busy, the jobs running (comma-separated ids), facility power."""
        return pd.DataFrame(self.schedule)

    def headline(self) -> str:
        """'Optimal fleet: cost = 31,815,406 USD' (the objective with its unit); a plan stopped by the time limit
        says it is not proven optimal; without a plan, 'No feasible fleet' or 'No fleet within the time limit'."""
        if self.objective_value is None:
            return "No fleet within the time limit" if self.status == "no_solution" else "No feasible fleet"
        head = "Optimal fleet" if self.status == "optimal" else "Best fleet within the time limit (not proven optimal)"
        unit = OBJECTIVE_UNITS_TEXT.get(self.objective, "")
        return f"{head}: {self.objective} = {objective_text(self.objective_value)} {unit}".rstrip()

    def decisions(self, markdown: bool = False) -> list[str]:
        """What the plan keeps and retires of the owned servers, buys (per server type, on which fabric) and
        rents, the jobs that compute in another precision than they asked for, and the totals: one line each,
        as markdown list items (``markdown``, the app's) or plain text (``summary``)."""
        proved = [f"- **Proved**: {x}." if markdown else f"Proved: {x}" for x in self.proofs]
        return self._acquisitions(markdown) + self._precision_notes(markdown) + [self._totals_line(markdown)] + proved

    def summary(self) -> str:
        """The plan in a few lines, as ``PlanResult.summary()`` writes a single-job plan: the status and the
        objective with its unit; what is kept and retired of the owned servers, bought and rented per server type
        and fabric; per job its pool, nodes, the slots it runs in and how late it ends; the jobs computing in a
        fallback precision; the totals; HiGHS's bound and gap. Without a plan, why (the explanation)."""
        if self.objective_value is None:
            return f"{self.headline()}: {self.explanation or self.status}"
        lines = [self.headline()]
        lines += ["  " + x for x in self._acquisitions(False)]
        lines.append("  Jobs (pool, slots run, lateness):")
        for a in self.assignments:
            rented = " (rented)" if a.get("kind") == "rent" else ""
            late = int(a.get("late_slots", 0))
            lines.append(
                f"    {a['job']}: {a['nodes']:,} x {a['server']} on {a['fabric']}{rented}, "
                f"slot{'' if len(a['slots']) == 1 else 's'} {slot_ranges(a['slots'])} ({len(a['slots'])} run), "
                + (f"late by {late} slot{'' if late == 1 else 's'}" if late else "on time")
            )
        lines += ["  " + x for x in self._precision_notes(False)]
        lines.append("  " + self._totals_line(False))
        if self.solver is not None:
            unit = OBJECTIVE_UNITS_TEXT.get(self.objective, "")
            rep = self.solver
            bound = f"bound {objective_text(rep.bound)} {unit}" if rep.bound is not None else "no bound"
            gap = f", gap {rep.gap:.2%}" if rep.gap is not None else ""
            lines.append(f"  Solver: HiGHS {rep.status.value}, {bound}{gap}")
        lines += [f"  Proved: {x}" for x in self.proofs]
        return "\n".join(lines)

    def _acquisitions(self, markdown: bool) -> list[str]:
        b = _strong(markdown)
        end = "." if markdown else ""
        keeps, buys, rents = [], [], []
        for p in self.purchases:
            if p["kind"] == "rent":
                periods = p["node_periods"]
                rents.append(
                    f"{b('Rents')} {p['nodes']} x {p['server']} at peak ({periods:,} node billing "
                    f"period{'' if periods == 1 else 's'}, ${p['rent_usd']:,.0f}){end}"
                )
                continue
            if p["owned"]:
                keeps.append(
                    f"{b('Keeps')} {p['kept']} of {p['owned']} owned {p['server']} on {p['fabric']}"
                    + (f", {b('retires')} {p['retired']}" if p["retired"] else ", retires none")
                    + end
                )
            if p["added"]:
                where = f"extending the owned {p['fabric']} cluster" if p["owned"] else f"on {p['fabric']}"
                buys.append(
                    f"{b('Buys')} {p['added']} x {p['server']} {where} ({switches_text(p['switches_added'])} "
                    f"added, capex ${p['capex_usd']:,.0f}){end}"
                )
        lines = keeps + (buys or [f"{b('Buys')} nothing{end}"]) + (rents or [f"{b('Rents')} nothing{end}"])
        return [("- " if markdown else "") + x for x in lines]

    def _precision_notes(self, markdown: bool) -> list[str]:
        """A job asked for fp4 (or fp8) on a pool without it: never silent (fp16 is bf16's rate: no note); a job
        computing in a precision no published recipe trains its workload in (textfmt.precision_caveat)."""
        b = _strong(markdown)
        notes = []
        for a in self.assignments:
            if (
                a.get("precision_asked") in ("fp8", "fp4")
                and a.get("precision")
                and a["precision"] != a["precision_asked"]
            ):
                asked, used = a["precision_asked"], a["precision"]
                notes.append(f"{b(a['job'])} runs on {a['gpu']}, which has no {asked}: it computes in {used}")
            caveat = precision_caveat(a.get("model", ""), a.get("workload_family", ""), a.get("precision", ""))
            if caveat:
                notes.append(f"{b(a['job'])}: {caveat}")
        return [f"- {x}." if markdown else x for x in notes]

    def _totals_line(self, markdown: bool) -> str:
        t = self.totals
        return (
            f"{'- ' if markdown else ''}{_strong(markdown)('Totals')}: capex ${t.get('capex_usd', 0):,.0f}, rent "
            f"${t.get('rent_usd', 0):,.0f}, cost over the horizon ${t.get('cost_usd', 0):,.0f} (the bought "
            f"hardware's share + site energy + rent + late penalties); facility energy "
            f"{sig4(t.get('facility_energy_kwh', 0))} kWh; peak site power {sig4(t.get('peak_site_power_kw', 0))} kW"
            + ("." if markdown else "")
        )


def _strong(markdown: bool) -> Callable[[str], str]:
    """Markdown's strong emphasis ('**Buys**') for the app's lines, nothing for plain text."""
    return (lambda text: f"**{text}**") if markdown else (lambda text: text)


def load_fleet_request(path: str) -> FleetRequest:
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except FileNotFoundError:
        raise PlannerInputError(f"fleet file not found: {path}") from None
    except (IsADirectoryError, UnicodeDecodeError) as exc:
        raise PlannerInputError(f"{path}: not a YAML fleet request ({exc.__class__.__name__})") from None
    except yaml.YAMLError as exc:
        raise PlannerInputError(f"{path}: not valid YAML: {exc}") from None
    try:
        return FleetRequest.model_validate(data)
    except ValidationError as exc:
        raise PlannerInputError(describe_validation_error(exc, path)) from None


# ------------------------------------------------------------------------------------------------ pools
@dataclass(frozen=True)
class OwnedEntry:
    server: str
    fabric: str
    count: int
    avail: tuple[int, ...]  # 1 in the slots the nodes are in service


@dataclass
class Pools:
    """What capacity exists: owned entries, buy options (type -> fabrics), rental offers (type -> fabric)."""

    owned: list[OwnedEntry]
    buy: dict[str, list[str]]
    rent: dict[str, str]
    idle_kw: dict[str, float]  # facility power of one idle node of each type
    owned_fabrics: dict[str, set[str]] = field(default_factory=dict)

    def site_group(self, server: str, fabric: str) -> str:
        return f"{server}|{fabric}" if server in self.owned_fabrics else f"{server}|*"

    def owned_on(self, server: str, fabric: str) -> int:
        return sum(e.count for e in self.owned if e.server == server and e.fabric == fabric)


def billing_period_h(server: Server) -> float:
    """Hours of one billing period of the server's rental offer (planner/physics/cost.py)."""
    return cost_mod.BILLING_PERIOD_H[server.rent_billing_period]


def cap_settable(server: Server) -> bool:
    return server.power_cap_settable


def pools_of(cat: Catalog, req: FleetRequest) -> Pools:
    from planner.checks import match_gpus

    site = cat.site(req.site)
    allowed = [s for s in cat.gpu_servers() if (req.servers is None or s.id in req.servers)]
    if req.servers is not None:
        for sid in req.servers:
            cat.server(sid)
    if req.gpus is not None:
        gpus = match_gpus(cat, req.gpus)
        allowed = [s for s in allowed if s.gpu in gpus]
    for f in req.fabrics or ():
        cat.fabric(f)
    buy: dict[str, list[str]] = {}
    rent: dict[str, str] = {}
    if req.purchase in ("buy", "either"):
        for s in allowed:
            fabs = [f for f in s.fabrics if req.fabrics is None or f in req.fabrics]
            if s.price_usd is not None and fabs:
                buy[s.id] = fabs
    if req.purchase in ("rent", "either"):
        for s in allowed:
            if s.rent_usd_per_month is not None:
                rent[s.id] = s.fabrics[0]
    owned: list[OwnedEntry] = []
    for o in req.owned:
        s = cat.server(o.server)
        if s.gpu is None:
            raise PlannerInputError(f"owned server '{o.server}' has no GPU: list GPU servers only")
        fab = o.fabric or s.fabrics[0]
        if fab not in s.fabrics:
            raise PlannerInputError(
                f"owned {o.server}: fabric '{fab}' is not one it can be built with ({', '.join(s.fabrics)})"
            )
        end = o.retire_at_age_years if o.retire_at_age_years is not None else req.life_years
        avail = tuple(
            int(o.age_years + (t + 1) * req.slot_hours / cost_mod.HOURS_PER_YEAR <= end + 1e-12)
            for t in range(req.slots)
        )
        owned.append(OwnedEntry(o.server, fab, o.count, avail))
    if not buy and not rent and not owned:
        raise PlannerInputError(
            "no allowed server can be bought, rented or is owned as asked: widen gpus/servers/fabrics or the purchase"
        )
    types = set(buy) | set(rent) | {e.server for e in owned}
    check_job_precisions(cat, req, types)
    idle = {p: power_mod.idle_node_kw(cat.server(p), cat.gpu(cat.server(p).gpu or ""), site.pue) for p in types}
    owned_f: dict[str, set[str]] = {}
    for e in owned:
        owned_f.setdefault(e.server, set()).add(e.fabric)
    return Pools(owned, buy, rent, idle, owned_f)


def check_job_precisions(cat: Catalog, req: FleetRequest, types: Collection[str]) -> None:
    """A job asking for fp8 or fp4 by name where none of the fleet's allowed servers has a GPU with it: bad input,
    never a plan silently computed in another precision (as `planner solve` refuses it). Where some have it, a mode
    on a GPU without computes in its fallback and the schedule's precision column says so."""
    from planner.checks import fp8_in, precision_problem_text

    gpus = sorted({cat.server(p).gpu or "" for p in types} - {""})
    for j in req.jobs:
        if j.precision in compute.LOW_PRECISION_FIELDS and not any(
            compute.has_precision(cat.gpu(g), j.precision) for g in gpus
        ):
            fix = "give the job precision: bf16 (or leave it out for the workload's)"
            text = precision_problem_text(j.precision, gpus, fix, "fields", fp8_in(cat, gpus))
            raise PlannerInputError(f"job '{j.id}': precision {text}")


# ------------------------------------------------------------------------------------------------ modes
def job_window(req: FleetRequest, j: Job) -> list[int]:
    last = req.slots - 1 if j.penalty_usd_per_slot is not None else min(j.due_slot, req.slots - 1)
    return list(range(j.release_slot, last + 1))


def slots_needed(hours: np.ndarray, slot_hours: float) -> np.ndarray:
    return np.maximum(np.ceil(np.asarray(hours, dtype=float) / slot_hours * (1 - SLOT_EPS)), 1.0)


def pareto_mask(X: np.ndarray) -> np.ndarray:
    """Rows of X (all columns minimised) not dominated by another row (<= everywhere); of equal rows the
    first is kept. Exact: in lexicographic order (stable, so equal rows keep their order) a dominating row always
    comes first, so a row is dropped iff an earlier row is <= everywhere. First, each row is compared with the
    first row in that order of the same value in column 1 (the fleet's slots needed: the fewest-node mode of
    that slot count) and dropped when that row is <= it everywhere -- that row stays, so anything it drops would
    be dropped by it below too. Then the rows left are swept in order: the first is kept and every later row it
    is <= everywhere is dropped, then the next row left. A dropped row is no loss as a dominator: it was dropped
    by an earlier row <= it everywhere that is kept or was itself dropped by an earlier one, and a kept row met
    first drops whatever it dominated (transitive). On bench_fleet.py's 50-job modes (1,504 groups of about
    4,000 rows, fronts of 3-101) pruning takes 0.9 s, where the earlier exact prefilter (running minima per
    column-1 value) and chunked pairwise comparison took 3.2 s (``bench_fleet.py --profile-modes``)."""
    n = len(X)
    if n <= 1:
        return np.ones(n, dtype=bool)
    order = np.lexsort(X.T[::-1])
    Y = X[order]
    _, first, inv = np.unique(Y[:, 1], return_index=True, return_inverse=True)
    rep = first[inv]  # the first row of each column-1 value
    rest = np.flatnonzero(~(Y[rep] <= Y).all(axis=1) | (rep == np.arange(n)))
    keep = np.zeros(n, dtype=bool)
    while len(rest):
        i = rest[0]
        keep[i] = True
        rest = rest[1:]
        rest = rest[~(Y[i] <= Y[rest]).all(axis=1)]
    out = np.zeros(n, dtype=bool)
    out[order[keep]] = True
    return out


def job_modes(cat: Catalog, req: FleetRequest, prune: bool = True, pools: Pools | None = None) -> pd.DataFrame:
    """Exact-model modes of every job in every pool it fits, within its window; dominated modes pruned."""
    pools = pools or pools_of(cat, req)
    cat.site(req.site)
    # every (server, fabric) pair that is a site cluster (bought and/or owned) or a rental offer
    pairs = sorted(
        {(p, f) for p, fabs in pools.buy.items() for f in fabs}
        | {(e.server, e.fabric) for e in pools.owned}
        | set(pools.rent.items())
    )
    site_lim = np.asarray(
        [(req.max_nodes if f in pools.buy.get(p, []) else 0) + pools.owned_on(p, f) for p, f in pairs], dtype=np.int64
    )
    rent_ok = np.asarray([pools.rent.get(p) == f for p, f in pairs])
    settable = np.asarray([cap_settable(cat.server(p)) for p, _ in pairs])
    per_job_pair = np.asarray([billed_per_job(cat.server(p), req.slot_hours) for p, _ in pairs], dtype=bool)
    idle_pair = np.asarray([pools.idle_kw[p] for p, _ in pairs])
    site_group = [pools.site_group(p, f) for p, f in pairs]
    any_pair = np.asarray([g.endswith("|*") for g in site_group], dtype=bool)  # a type without owned nodes
    type_ids = sorted({p for p, _ in pairs})
    type_of = np.asarray([type_ids.index(p) for p, _ in pairs], dtype=np.int64)
    fabric_ids = sorted({f for _, f in pairs})
    fabric_of = np.asarray([fabric_ids.index(f) for _, f in pairs], dtype=np.int64)
    rows: list[tuple[int, float, np.ndarray]] = []  # (pair, cap, node counts)
    for i, (p, _f) in enumerate(pairs):
        s = cat.server(p)
        gpu = cat.gpu(s.gpu or "")
        caps = {c for c in req.power_caps if gpu.allows_cap(c)}
        if rent_ok[i] and not settable[i]:
            caps.add(1.0)
        lim = max(int(site_lim[i]), req.max_nodes if rent_ok[i] else 0)
        counts = (
            np.arange(1, lim + 1)
            if req.node_counts is None
            else np.asarray(sorted(n for n in set(req.node_counts) if n <= lim))
        )
        for c in sorted(caps):
            rows.append((i, c, counts.astype(np.int64)))
    if not rows:
        return pd.DataFrame()
    # the configurations as evaluate_space's integer-coded table, built once for every (workload, work) below
    pair_of = np.concatenate([np.full(len(n), i, dtype=np.int64) for i, _c, n in rows])
    cap_of = np.concatenate([np.full(len(n), c, dtype=float) for _i, c, n in rows])
    space = Space(
        type_ids, fabric_ids, type_of[pair_of], fabric_of[pair_of], cap_of, np.concatenate([n for *_x, n in rows])
    )
    caps_ok = np.isin(cap_of, req.power_caps)
    by_work: dict[tuple[str, float | None, str | None], list[Job]] = {}
    for j in req.jobs:
        wl = cat.workload(j.model)
        by_work.setdefault((j.model, work_from(wl, j.samples, j.tokens, j.epochs), j.precision), []).append(j)
    frames = []
    fitting = 0
    # one evaluation per (workload, precision); other amounts of work of it scale (planner.physics.model.scale_work).
    # Each
    # evaluated table (~215 MiB at the bench's 540,672 configurations) is let go after its last amount of work
    evaluated: dict[tuple[str, str | None], tuple[float, pd.DataFrame]] = {}
    uses: dict[tuple[str, str | None], int] = {}
    for model, _samples, precision in by_work:
        uses[(model, precision)] = uses.get((model, precision), 0) + 1
    for (model, samples, precision), jobs in by_work.items():
        amount = float(samples if samples is not None else cat.workload(model).default_samples)
        wp = (model, precision)
        if wp in evaluated:
            base, base_df = evaluated[wp]
            df = scale_work(cat, base_df, base, amount, req.site, "buy", req.life_years)
        else:
            work = Work(amount, precision=precision)
            df = evaluate_space(
                cat, model, space=space, site=req.site, purchase="buy", work=work, life_years=req.life_years
            )
            evaluated[wp] = (amount, df)
        uses[wp] -= 1
        if not uses[wp]:
            del evaluated[wp]
        nodes = df["nodes"].to_numpy(np.int64)
        hours = df["time_to_train_h"].to_numpy(float)
        d = slots_needed(hours, req.slot_hours)
        ok = df["fits_memory"].to_numpy(bool) & df["valid_layout"].to_numpy(bool)
        ok &= d <= max(len(job_window(req, j)) for j in jobs)
        kinds = []
        # site clusters: allowed caps, up to the cluster's limit; rentals: the offer's caps, up to max_nodes
        kinds.append(("site", ok & caps_ok & (nodes <= site_lim[pair_of])))
        kinds.append(
            (
                "rent",
                ok & rent_ok[pair_of] & np.where(settable[pair_of], caps_ok, cap_of == 1.0) & (nodes <= req.max_nodes),
            )
        )
        power = df["facility_power_kw"].to_numpy(float)
        energy = df["facility_energy_kwh"].to_numpy(float)
        parts = []
        for kind, sel in kinds:
            idx = np.flatnonzero(sel)
            if not len(idx):
                continue
            pr = pair_of[idx]
            if kind == "site":
                e_coef = np.maximum(energy[idx] - nodes[idx] * idle_pair[pr] * hours[idx], 0.0)
                p_coef = np.maximum(power[idx] - nodes[idx] * idle_pair[pr], 0.0)
            else:
                e_coef, p_coef = energy[idx], np.zeros(len(idx))
            # the rent a mode pays on an offer billed per job, nodes x ceil(T / period) (0 elsewhere: nodes and
            # slots price the rest): more nodes may finish in fewer whole periods and pay less
            per_job = per_job_pair[pr] & (kind == "rent")
            rent_coef = np.zeros(len(idx))
            for q in np.unique(pr[per_job]):
                sel = per_job & (pr == q)
                rent_coef[sel] = job_rent_usd(cat.server(pairs[q][0]), nodes[idx][sel], hours[idx][sel])
            X = np.column_stack([nodes[idx], d[idx], e_coef, p_coef, rent_coef])
            keep = np.ones(len(idx), dtype=bool)
            fitting += sum(int((d[idx] <= len(job_window(req, j))).sum()) for j in jobs)
            # a one-node mode of a type bought on any fabric needs no network: its time, power and energy are
            # the same on every fabric (no NICs, switches or inter-node traffic), so it is one mode on "any"
            anyfab = (nodes[idx] == 1) & any_pair[pr] & (kind == "site")
            key = np.where(anyfab, len(pairs) + type_of[pr], pr)
            if prune:
                keep[:] = False
                order = np.argsort(key, kind="stable")
                bounds = np.flatnonzero(np.diff(key[order])) + 1
                for grp in np.split(order, bounds):
                    keep[grp[pareto_mask(X[grp])]] = True
            idx, pr, X, anyfab = idx[keep], pr[keep], X[keep], anyfab[keep]
            parts.append(
                pd.DataFrame(
                    {
                        "server": [pairs[q][0] for q in pr],
                        "fabric": [ANY_FABRIC if a else pairs[q][1] for q, a in zip(pr, anyfab, strict=True)],
                        "gpu": df["gpu"].iloc[idx].to_numpy().astype(str),
                        "power_cap": df["power_cap"].to_numpy(float)[idx],
                        "nodes": nodes[idx],
                        "layout": df["layout"].iloc[idx].to_numpy().astype(str),
                        "precision": df["precision"].iloc[idx].to_numpy().astype(str),
                        "time_to_train_h": hours[idx],
                        "slots_needed": d[idx].astype(np.int64),
                        "facility_power_kw": power[idx],
                        "facility_energy_kwh": energy[idx],
                        "idle_kw": idle_pair[pr],
                        "kind": kind,
                        "group": [site_group[q] if kind == "site" else f"{pairs[q][0]}|rent" for q in pr],
                        "energy_coef_kwh": X[:, 2],
                        "power_coef_kw": X[:, 3],
                    }
                )
            )
        if not parts:
            continue
        modes = pd.concat(parts, ignore_index=True)
        for j in jobs:
            mj = modes[modes["slots_needed"].to_numpy() <= len(job_window(req, j))].copy()
            mj["job"] = j.id
            frames.append(mj)
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    out.attrs["fitting_modes"] = fitting  # before pruning
    return out


# ------------------------------------------------------------------------------------------------ billing
def billing_blocks(slots: int, slot_hours: float, period_h: float) -> list[tuple[list[int], int]]:
    """Billing periods from the start of the horizon, grouped into blocks of consecutive periods that overlap
    the same slots: (slots overlapped, number of periods). A node rented in a slot pays every period the
    slot overlaps."""
    horizon = slots * slot_hours
    n_periods = math.ceil(horizon / period_h * (1 - SLOT_EPS))
    blocks: list[tuple[list[int], int]] = []
    for k in range(n_periods):
        a, b = k * period_h, (k + 1) * period_h
        first = math.floor(a / slot_hours + SLOT_EPS)
        last = min(slots - 1, math.ceil(b / slot_hours - SLOT_EPS) - 1)
        ts = list(range(first, last + 1))
        if blocks and blocks[-1][0] == ts:
            blocks[-1] = (ts, blocks[-1][1] + 1)
        else:
            blocks.append((ts, 1))
    return blocks


def billed_per_job(server: Server, slot_hours: float) -> bool:
    """Whether the server's rental offer is billed per job: its billing period divides the slot (an hourly
    offer with any whole-hour slot, a daily one with weekly slots). A job then rents its own nodes and pays
    ceil(T / period) periods per node (the single-job rule of planner/physics/cost.py): it runs its d = ceil(T / H)
    slots with the full ones first, so every period but its last is fully used. Other offers (a period longer
    than a slot) are billed by the slots their nodes are rented in (``billing_blocks``)."""
    period = billing_period_h(server)
    k = slot_hours / period
    return k >= 1 - SLOT_EPS and abs(k - round(k)) <= SLOT_EPS * max(1.0, k)


def job_rent_usd(server: Server, nodes: Any, hours: Any) -> np.ndarray:
    """Rent of jobs billed per job (``billed_per_job``): nodes x ceil(T / period) x the period's price."""
    return cost_mod.rent_usd(nodes, server.rent_usd_per_month or 0.0, hours, billing_period_h(server))


def group_rent_usd(
    cat: Catalog, req: FleetRequest, group: str, nodes_per_slot: np.ndarray, chosen: dict[str, pd.Series]
) -> tuple[float, int]:
    """Rent of a rental group (``p|rent``) in a plan: (USD, node-periods). Billed per job (``billed_per_job``):
    each job in it pays its nodes x ceil(T / period); otherwise by the slots its nodes are rented in."""
    server = cat.server(group.split("|")[0])
    if not billed_per_job(server, req.slot_hours):
        return rent_cost_usd(server, nodes_per_slot, req.slot_hours)
    rows = [r for r in chosen.values() if r["group"] == group]
    usd = sum(float(job_rent_usd(server, int(r["nodes"]), float(r["time_to_train_h"]))) for r in rows)
    periods = sum(
        int(r["nodes"]) * int(cost_mod.billed_periods(float(r["time_to_train_h"]), billing_period_h(server)))
        for r in rows
    )
    return usd, periods


def period_price_usd(server: Server) -> float:
    return (server.rent_usd_per_month or 0.0) * billing_period_h(server) / cost_mod.HOURS_PER_MONTH


def rent_cost_usd(server: Server, nodes_per_slot: np.ndarray, slot_hours: float) -> tuple[float, int]:
    """Rent of a node count per slot, in whole billing periods: (USD, node-periods)."""
    node_periods = 0
    for ts, count in billing_blocks(len(nodes_per_slot), slot_hours, billing_period_h(server)):
        node_periods += int(max(nodes_per_slot[t] for t in ts)) * count
    return node_periods * period_price_usd(server), node_periods


def owned_capex_usd(cat: Catalog, server: str, fabric: str, owned: int, added: int) -> tuple[float, int]:
    """Capex of growing a cluster from `owned` to `owned + added` nodes: (USD, switches added),
    planner/physics/cost.py."""
    s, f = cat.server(server), cat.fabric(fabric)

    def capex(n: int) -> float:
        sw = int(cost_mod.switch_count(n, s.nic_ports, f.switch_radix))
        cables = int(cost_mod.cable_count(n, s.nic_ports, f.switch_radix))
        return float(
            cost_mod.capex_usd(
                n, s.price_usd or 0.0, s.nic_ports, f.nic_price_usd, sw, f.switch_price_usd, cables, f.cable_price_usd
            )
        )

    if added <= 0:
        return 0.0, 0
    sw_new = int(cost_mod.switch_count(owned + added, s.nic_ports, f.switch_radix)) - int(
        cost_mod.switch_count(owned, s.nic_ports, f.switch_radix)
    )
    return capex(owned + added) - capex(owned), sw_new


# ------------------------------------------------------------------------------------------------ MIP
@dataclass
class Index:
    """Data of the MIP: modes as arrays and the index sets built from them."""

    modes: pd.DataFrame
    window: dict[str, list[int]]
    by_job: dict[str, list[int]]
    by_jg: dict[tuple[str, str], list[int]]
    groups: list[str]
    pools: Pools
    blocks: dict[str, list[tuple[list[int], int]]]
    per_job: frozenset[str] = frozenset()  # rental offers billed per job (billed_per_job)

    def block_group(self, g: str) -> bool:
        """A group with a capacity per slot: a site cluster or a rental billed by the slot (not per job)."""
        p, tag = g.split("|")
        return tag != "rent" or p not in self.per_job


def build_fleet_model(
    cat: Catalog,
    req: FleetRequest,
    modes: pd.DataFrame,
    pools: Pools | None = None,
    rounded_work: bool = True,
    cuts: Collection[str] = CUT_FAMILIES,
) -> pyo.ConcreteModel:
    """The MIP of the module docstring. ``rounded_work=False`` writes (2) with hours (sum H r >= sum T z) and
    ``cuts`` names the valid-inequality families (12)-(15) to add (default all): the weaker formulations are
    kept to measure the root bound of each step (bench/)."""
    pools = pools or pools_of(cat, req)
    modes = modes.reset_index(drop=True)
    m = pyo.ConcreteModel(name="fleet")
    window = {j.id: job_window(req, j) for j in req.jobs}
    job_col = modes["job"].to_numpy()
    grp_col = modes["group"].to_numpy()
    by_job: dict[str, list[int]] = {j.id: [] for j in req.jobs}
    by_jg: dict[tuple[str, str], list[int]] = {}
    for k, (jj, gg) in enumerate(zip(job_col, grp_col, strict=True)):
        by_job[jj].append(k)
        by_jg.setdefault((jj, gg), []).append(k)
    groups = sorted(set(grp_col))
    blocks = {p: billing_blocks(req.slots, req.slot_hours, billing_period_h(cat.server(p))) for p in pools.rent}
    per_job = frozenset(p for p in pools.rent if billed_per_job(cat.server(p), req.slot_hours))
    ix = Index(modes, window, by_job, by_jg, groups, pools, blocks, per_job)
    m.ix = ix
    m.J = pyo.Set(initialize=[j.id for j in req.jobs], ordered=True)
    m.T = pyo.RangeSet(0, req.slots - 1)
    m.M = pyo.RangeSet(0, len(modes) - 1)
    m.JT = pyo.Set(dimen=2, initialize=[(j, t) for j in m.J for t in window[j]])
    m.JG = pyo.Set(dimen=2, initialize=sorted(by_jg))
    m.JGT = pyo.Set(dimen=3, initialize=[(j, g, t) for (j, g) in sorted(by_jg) for t in window[j]])
    m.BUY = pyo.Set(dimen=2, initialize=[(p, f) for p in sorted(pools.buy) for f in pools.buy[p]])
    m.E = pyo.RangeSet(0, len(pools.owned) - 1)
    rent_used = sorted({g.split("|")[0] for g in groups if g.endswith("|rent") and ix.block_group(g)})
    m.RP = pyo.Set(initialize=rent_used)
    m.RB = pyo.Set(dimen=2, initialize=[(p, b) for p in rent_used for b in range(len(blocks[p]))])

    nodes = modes["nodes"].to_numpy(np.int64)
    d = modes["slots_needed"].to_numpy(np.int64)
    m.z = pyo.Var(m.M, domain=pyo.Binary)
    m.r = pyo.Var(m.JT, domain=pyo.Binary)
    m.a = pyo.Var(m.JG, domain=pyo.NonNegativeReals)
    m.u = pyo.Var(m.JGT, domain=pyo.NonNegativeReals)
    m.q = pyo.Var(m.JT, domain=pyo.NonNegativeReals)
    m.y = pyo.Var(m.BUY, domain=pyo.Binary)
    m.N = pyo.Var(m.BUY, domain=pyo.NonNegativeIntegers, bounds=(0, req.max_nodes))
    m.K = pyo.Var(m.E, domain=pyo.NonNegativeIntegers, bounds=lambda m, e: (0, pools.owned[e].count))
    m.R = pyo.Var(m.RP, m.T, domain=pyo.NonNegativeIntegers, bounds=(0, req.max_nodes))
    m.V = pyo.Var(m.RB, domain=pyo.NonNegativeIntegers, bounds=(0, req.max_nodes))
    m.late = pyo.Var(m.J, domain=pyo.NonNegativeReals)

    add_one_mode(m, ix)
    add_work(m, ix, d if rounded_work else modes["time_to_train_h"].to_numpy(float) / req.slot_hours)
    add_nodes(m, ix, nodes)
    add_capacity(m, ix, req)
    add_fabric_choice(m, ix, req)
    add_power(m, ix, req, cat)
    capex = add_switches(m, ix, req, cat)
    rent = add_billing(m, ix, cat)
    add_budget(m, req, capex, rent)
    add_lateness(m, ix, req)
    if "cover" in cuts:
        add_cuts(m, ix, req, nodes, d)
    if "energetic" in cuts:
        add_energetic_cuts(m, ix, req, nodes, d)
    if "network" in cuts:
        add_network_cuts(m, ix, req, cat)
    if "fabric_cover" in cuts:
        add_fabric_cover_cuts(m, ix, nodes)
    add_objective(m, ix, req, cat, capex, rent)
    return m


def _c(x: float) -> float:
    """A coefficient for HiGHS: magnitudes below 1e-7 (USD, kWh, kW) become 0 -- such coefficients change no
    plan but can mislead presolve's numerics (a 1e-54 USD switch price made it report a feasible MIP infeasible)."""
    return 0.0 if abs(x) < 1e-7 else float(x)


def _row(expr: Any) -> Any:
    """A constraint row, or Pyomo's marker when the expression is constant (no variable left in it)."""
    if isinstance(expr, bool):
        return pyo.Constraint.Feasible if expr else pyo.Constraint.Infeasible
    return expr


def _capacity(m: pyo.ConcreteModel, ix: Index, g: str, t: int | None) -> Any:
    """Nodes group g has in slot t (t None: the most it can have in any slot)."""
    p, tag = g.split("|")
    if tag == "rent":
        return m.R[p, t] if t is not None else None
    fabs = ix.pools.buy.get(p, []) if tag == "*" else [tag] if tag in ix.pools.buy.get(p, []) else []
    bought = sum(m.N[p, f] for f in fabs)
    own = sum(
        (e.avail[t] if t is not None else 1) * m.K[i]
        for i, e in enumerate(ix.pools.owned)
        if e.server == p and e.fabric == tag
    )
    return bought + own


def _capacity_sum(m: pyo.ConcreteModel, ix: Index, g: str, ts: range) -> Any:
    """Nodes group g has summed over the slots ts, one term per variable: |ts| N_pf + (its slots in service) K_e,
    or the rented R_pt (the sum of ``_capacity`` over ts, written compactly)."""
    p, tag = g.split("|")
    if tag == "rent":
        return pyo.quicksum(m.R[p, t] for t in ts)
    fabs = ix.pools.buy.get(p, []) if tag == "*" else [tag] if tag in ix.pools.buy.get(p, []) else []
    bought = pyo.quicksum(len(ts) * m.N[p, f] for f in fabs)
    own = pyo.quicksum(
        sum(e.avail[t] for t in ts) * m.K[i] for i, e in enumerate(ix.pools.owned) if e.server == p and e.fabric == tag
    )
    return bought + own


def add_one_mode(m: pyo.ConcreteModel, ix: Index) -> None:
    """(1) every job runs in exactly one mode."""
    m.one_mode = pyo.Constraint(m.J, rule=lambda m, j: pyo.quicksum(m.z[k] for k in ix.by_job[j]) == 1)


def add_work(m: pyo.ConcreteModel, ix: Index, d: np.ndarray) -> None:
    """(2) a job runs in at least the d_m slots its mode needs."""
    m.work = pyo.Constraint(
        m.J,
        rule=lambda m, j: (
            pyo.quicksum(m.r[j, t] for t in ix.window[j]) >= pyo.quicksum(float(d[k]) * m.z[k] for k in ix.by_job[j])
        ),
    )


def add_nodes(m: pyo.ConcreteModel, ix: Index, nodes: np.ndarray) -> None:
    """(3) nodes a job takes in a group; (4) held in every slot it runs."""
    m.nodes_of = pyo.Constraint(
        m.JG, rule=lambda m, j, g: m.a[j, g] == pyo.quicksum(int(nodes[k]) * m.z[k] for k in ix.by_jg[(j, g)])
    )
    big = {jg: int(max(nodes[k] for k in ks)) for jg, ks in ix.by_jg.items()}
    m.held = pyo.Constraint(m.JGT, rule=lambda m, j, g, t: m.u[j, g, t] >= m.a[j, g] - big[(j, g)] * (1 - m.r[j, t]))


def add_capacity(m: pyo.ConcreteModel, ix: Index, req: FleetRequest) -> None:
    """(5) nodes held in a group and slot fit its capacity (bought + kept owned in service, or rented)."""
    by_gt: dict[tuple[str, int], list[str]] = {}
    for j, g, t in m.JGT:
        by_gt.setdefault((g, t), []).append(j)
    m.capacity = pyo.Constraint(
        [(g, t) for g in ix.groups for t in range(req.slots) if (g, t) in by_gt and ix.block_group(g)],
        rule=lambda m, g, t: pyo.quicksum(m.u[j, g, t] for j in by_gt[(g, t)]) <= _capacity(m, ix, g, t),
    )


def add_fabric_choice(m: pyo.ConcreteModel, ix: Index, req: FleetRequest) -> None:
    """(6) one fabric per bought type; nodes only on it; a job uses a fabric without owned nodes only if chosen."""
    types = sorted(ix.pools.buy)
    m.one_fabric = pyo.Constraint(types, rule=lambda m, p: pyo.quicksum(m.y[p, f] for f in ix.pools.buy[p]) <= 1)
    m.bought_on = pyo.Constraint(m.BUY, rule=lambda m, p, f: m.N[p, f] <= req.max_nodes * m.y[p, f])
    modes = ix.modes
    links: dict[tuple[str, str, str], list[int]] = {}
    for k, (j, kind, p, f) in enumerate(
        zip(modes["job"], modes["kind"], modes["server"], modes["fabric"], strict=True)
    ):
        if kind == "site" and f != ANY_FABRIC and f not in ix.pools.owned_fabrics.get(p, set()):
            links.setdefault((j, p, f), []).append(k)
    m.uses_fabric = pyo.Constraint(
        sorted(links), rule=lambda m, j, p, f: pyo.quicksum(m.z[k] for k in links[(j, p, f)]) <= m.y[p, f]
    )


def add_power(m: pyo.ConcreteModel, ix: Index, req: FleetRequest, cat: Catalog) -> None:
    """(7) site power per slot: jobs above idle + idle of every powered node <= the envelope."""
    modes = ix.modes
    dp = modes["power_coef_kw"].to_numpy(float)
    site = modes["kind"].to_numpy() == "site"
    site_modes = {j: [k for k in ks if site[k]] for j, ks in ix.by_job.items()}
    top = {j: max((float(dp[k]) for k in ks), default=0.0) for j, ks in site_modes.items()}

    def job_power(m: pyo.ConcreteModel, j: str, t: int) -> Any:
        if top[j] <= 0:
            return pyo.Constraint.Skip
        return m.q[j, t] >= pyo.quicksum(float(dp[k]) * m.z[k] for k in site_modes[j]) - top[j] * (1 - m.r[j, t])

    m.job_power = pyo.Constraint(m.JT, rule=job_power)
    envelope = req.power_kw if req.power_kw is not None else cat.site(req.site).power_envelope_kw
    jt_by_t: dict[int, list[str]] = {}
    for j, t in m.JT:
        jt_by_t.setdefault(t, []).append(j)
    idle = ix.pools.idle_kw

    def slot_power(m: pyo.ConcreteModel, t: int) -> Any:
        base = pyo.quicksum(idle[p] * m.N[p, f] for p, f in m.BUY) + pyo.quicksum(
            idle[e.server] * e.avail[t] * m.K[i] for i, e in enumerate(ix.pools.owned)
        )
        return _row(pyo.quicksum(m.q[j, t] for j in jt_by_t.get(t, [])) + base <= envelope)

    m.power = pyo.Constraint(m.T, rule=slot_power)


def add_switches(m: pyo.ConcreteModel, ix: Index, req: FleetRequest, cat: Catalog) -> dict[tuple[str, str], Any]:
    """(8) switches, cables and NICs of every buy option, exact for one, two and three tiers (cost.py); returns
    the capex expression of each option (what growing the cluster from its owned nodes costs)."""
    owned = {(p, f): ix.pools.owned_on(p, f) for p, f in m.BUY}
    top = {(p, f): owned[(p, f)] + req.max_nodes for p, f in m.BUY}
    srv = {p: cat.server(p) for p in ix.pools.buy}
    fab = {f: cat.fabric(f) for fs in ix.pools.buy.values() for f in fs}
    m.multi = pyo.Var(m.BUY, domain=pyo.Binary)
    m.tier2 = pyo.Var(m.BUY, domain=pyo.Binary)
    m.tier3 = pyo.Var(m.BUY, domain=pyo.Binary)
    m.L = pyo.Var(m.BUY, domain=pyo.NonNegativeIntegers)
    m.S = pyo.Var(m.BUY, domain=pyo.NonNegativeIntegers)
    m.A = pyo.Var(m.BUY, domain=pyo.NonNegativeIntegers)
    m.W = pyo.Var(m.BUY, domain=pyo.NonNegativeIntegers)
    m.X1 = pyo.Var(m.BUY, domain=pyo.NonNegativeReals)
    m.X2 = pyo.Var(m.BUY, domain=pyo.NonNegativeReals)
    m.X3 = pyo.Var(m.BUY, domain=pyo.NonNegativeReals)

    def n(m: pyo.ConcreteModel, p: str, f: str) -> Any:
        return owned[(p, f)] + m.N[p, f]

    def ports(p: str) -> int:
        return srv[p].nic_ports

    def radix(f: str) -> int:
        return fab[f].switch_radix

    def big(p: str, f: str) -> float:
        return float(2 * ports(p) * top[(p, f)] + radix(f) ** 2)

    m.sw_multi = pyo.Constraint(m.BUY, rule=lambda m, p, f: n(m, p, f) <= 1 + top[(p, f)] * m.multi[p, f])
    m.sw_tier2 = pyo.Constraint(
        m.BUY, rule=lambda m, p, f: ports(p) * n(m, p, f) <= radix(f) + big(p, f) * m.tier2[p, f]
    )
    m.sw_tier3 = pyo.Constraint(
        m.BUY, rule=lambda m, p, f: 2 * ports(p) * n(m, p, f) <= radix(f) ** 2 + big(p, f) * m.tier3[p, f]
    )
    m.sw_order2 = pyo.Constraint(m.BUY, rule=lambda m, p, f: m.tier2[p, f] <= m.multi[p, f])
    m.sw_order3 = pyo.Constraint(m.BUY, rule=lambda m, p, f: m.tier3[p, f] <= m.tier2[p, f])
    m.sw_leaves = pyo.Constraint(
        m.BUY,
        rule=lambda m, p, f: radix(f) * m.L[p, f] >= 2 * ports(p) * n(m, p, f) - big(p, f) * (1 - m.tier2[p, f]),
    )
    m.sw_spines = pyo.Constraint(m.BUY, rule=lambda m, p, f: 2 * m.S[p, f] >= m.L[p, f])
    lmax = {(p, f): 2 * ports(p) * top[(p, f)] // radix(f) + 1 for p, f in m.BUY}
    m.sw_aggregation = pyo.Constraint(
        m.BUY, rule=lambda m, p, f: m.A[p, f] >= m.L[p, f] - lmax[(p, f)] * (1 - m.tier3[p, f])
    )
    m.sw_one = pyo.Constraint(m.BUY, rule=lambda m, p, f: m.W[p, f] >= m.multi[p, f])
    m.sw_total = pyo.Constraint(m.BUY, rule=lambda m, p, f: m.W[p, f] >= m.L[p, f] + m.S[p, f] + m.A[p, f])
    for name, var, binv in (("sw_x1", m.X1, m.multi), ("sw_x2", m.X2, m.tier2), ("sw_x3", m.X3, m.tier3)):
        setattr(
            m,
            name,
            pyo.Constraint(
                m.BUY,
                rule=lambda m, p, f, var=var, binv=binv: var[p, f] >= n(m, p, f) - top[(p, f)] * (1 - binv[p, f]),
            ),
        )

    capex = {}
    for p, f in m.BUY:
        s, fb = srv[p], fab[f]
        base = owned_capex_usd(cat, p, f, 0, owned[(p, f)])[0] if owned[(p, f)] else 0.0
        capex[(p, f)] = (
            _c(s.price_usd or 0.0) * m.N[p, f]
            + _c(s.nic_ports * fb.nic_price_usd) * m.X1[p, f]
            + _c(s.nic_ports * fb.cable_price_usd) * (m.X1[p, f] + m.X2[p, f] + m.X3[p, f])
            + _c(fb.switch_price_usd) * m.W[p, f]
            - (base - (s.price_usd or 0.0) * owned[(p, f)])
        )
    return capex


def add_billing(m: pyo.ConcreteModel, ix: Index, cat: Catalog) -> Any:
    """(9) a node rented in a slot pays every billing period the slot overlaps; a job on an offer billed per job
    pays its own nodes' periods (rent_m z_m, ``job_rent_usd``); returns the rent expression."""
    m.billing = pyo.Constraint(
        [(p, b, t) for p, b in m.RB for t in ix.blocks[p][b][0]], rule=lambda m, p, b, t: m.V[p, b] >= m.R[p, t]
    )
    price = {p: _c(period_price_usd(cat.server(p))) for p in m.RP}
    block = pyo.quicksum(price[p] * ix.blocks[p][b][1] * m.V[p, b] for p, b in m.RB)
    rent = mode_rent_usd(ix, cat)
    return block + pyo.quicksum(_c(float(rent[k])) * m.z[int(k)] for k in np.flatnonzero(rent > 0))


def mode_rent_usd(ix: Index, cat: Catalog) -> np.ndarray:
    """Rent of each mode on an offer billed per job (``job_rent_usd``); 0 for every other mode."""
    modes = ix.modes
    out = np.zeros(len(modes))
    kind, server = modes["kind"].to_numpy(), modes["server"].to_numpy()
    for p in ix.per_job:
        sel = np.flatnonzero((kind == "rent") & (server == p))
        if len(sel):
            out[sel] = job_rent_usd(
                cat.server(p), modes["nodes"].to_numpy()[sel], modes["time_to_train_h"].to_numpy(float)[sel]
            )
    return out


def add_budget(m: pyo.ConcreteModel, req: FleetRequest, capex: dict[tuple[str, str], Any], rent: Any) -> None:
    """(10) capex of what is bought plus all rent within the budget."""
    if req.budget_usd is not None:
        m.budget = pyo.Constraint(rule=lambda m: _row(pyo.quicksum(capex.values()) + rent <= req.budget_usd))


def add_lateness(m: pyo.ConcreteModel, ix: Index, req: FleetRequest) -> None:
    """(11) late_j >= slots after the due slot in which job j still runs."""
    rows = [
        (j.id, t) for j in req.jobs if j.penalty_usd_per_slot is not None for t in ix.window[j.id] if t > j.due_slot
    ]
    due = {j.id: j.due_slot for j in req.jobs}
    m.lateness = pyo.Constraint(rows, rule=lambda m, j, t: m.late[j] >= (t - due[j]) * m.r[j, t])


def add_cuts(m: pyo.ConcreteModel, ix: Index, req: FleetRequest, nodes: np.ndarray, d: np.ndarray) -> None:
    """(12) valid inequalities: a site group holds at least the nodes of each job placed on it, and every group
    has at least the node-slots its jobs hold (the big-M rows alone let a fractional r hide every node)."""
    site_jg = [(j, g) for (j, g) in sorted(ix.by_jg) if not g.endswith("|rent")]
    m.cover = pyo.Constraint(site_jg, rule=lambda m, j, g: m.a[j, g] <= _capacity(m, ix, g, None))
    by_g: dict[str, list[int]] = {}
    for (_j, g), ks in ix.by_jg.items():
        by_g.setdefault(g, []).extend(ks)
    m.node_slots = pyo.Constraint(
        [g for g in ix.groups if ix.block_group(g)],
        rule=lambda m, g: (
            _capacity_sum(m, ix, g, range(req.slots)) >= pyo.quicksum(int(nodes[k] * d[k]) * m.z[k] for k in by_g[g])
        ),
    )


def add_energetic_cuts(m: pyo.ConcreteModel, ix: Index, req: FleetRequest, nodes: np.ndarray, d: np.ndarray) -> None:
    """(13) energetic reasoning over slot intervals. In an interval I = [a, b] a job j whose window W_j overlaps
    I runs at least d_m - |W_j \\ I| of its d_m slots inside I (it runs d_m slots of W_j, at most |W_j \\ I| of
    them outside I), each on n_m nodes of its group. So the capacity of group g summed over I is at least
    sum_j sum_{m in M_jg} n_m max(0, d_m - |W_j \\ I|) z_m -- valid for every schedule, and the node-slots
    row of (12) is the case I = all slots. Written with e_jgo >= sum_{m in M_jg} n_m max(0, d_m - o) z_m
    (o = |W_j \\ I|), for a in the first and b in the last slots of the windows; of intervals with the same
    terms only the shortest is kept (it is the strongest)."""
    win = {j: (ts[0], ts[-1]) for j, ts in ix.window.items() if ts}
    starts = sorted({w[0] for w in win.values()})
    ends = sorted({w[1] for w in win.values()})
    maxd = {jg: int(max(d[k] for k in ks)) for jg, ks in ix.by_jg.items()}
    by_g: dict[str, list[str]] = {}
    for j, g in sorted(ix.by_jg):
        if ix.block_group(g):
            by_g.setdefault(g, []).append(j)
    rows: dict[tuple[str, tuple[tuple[str, int], ...]], tuple[int, int]] = {}
    for g, jobs in by_g.items():
        for a in starts:
            for b in ends:
                if b < a:
                    continue
                terms = []
                for j in jobs:
                    s, e = win[j]
                    inside = min(b, e) - max(a, s) + 1
                    out = (e - s + 1) - inside
                    if inside > 0 and out < maxd[(j, g)]:
                        terms.append((j, out))
                if not terms:
                    continue
                key = (g, tuple(terms))
                if key not in rows or b - a < rows[key][1] - rows[key][0]:
                    rows[key] = (a, b)
    used = sorted({(j, g, o) for (g, terms) in rows for j, o in terms})
    m.ENER = pyo.Set(dimen=3, initialize=used)
    m.e = pyo.Var(m.ENER, domain=pyo.NonNegativeReals)
    m.energy_of = pyo.Constraint(
        m.ENER,
        rule=lambda m, j, g, o: (
            m.e[j, g, o] >= pyo.quicksum(int(nodes[k] * (d[k] - o)) * m.z[k] for k in ix.by_jg[(j, g)] if d[k] > o)
        ),
    )
    keys = sorted(rows)
    m.energetic = pyo.Constraint(
        range(len(keys)),
        rule=lambda m, i: (
            pyo.quicksum(m.e[j, keys[i][0], o] for j, o in keys[i][1])
            <= _capacity_sum(m, ix, keys[i][0], range(rows[keys[i]][0], rows[keys[i]][1] + 1))
        ),
    )


def network_envelope(cat: Catalog, server: str, fabric: str, owned: int, most: int) -> list[tuple[float, float]]:
    """Lines (slope, intercept) of the lower convex envelope of the network capex (NICs, cables, switches, as
    written in (8)) of a cluster of n = owned..owned + most nodes: every line lies on or below it."""
    s, fb = cat.server(server), cat.fabric(fabric)
    k, radix = s.nic_ports, fb.switch_radix
    n = np.arange(owned, owned + most + 1, dtype=np.int64)
    x1 = np.where(n >= 2, n, 0)
    x2 = np.where(k * n > radix, n, 0)
    x3 = np.where(2 * k * n > radix**2, n, 0)
    w = cost_mod.switch_count(n, k, radix)
    g = _c(k * fb.nic_price_usd) * x1 + _c(k * fb.cable_price_usd) * (x1 + x2 + x3) + _c(fb.switch_price_usd) * w
    hull: list[int] = []  # lower convex hull, monotone chain
    for i in range(len(n)):
        while len(hull) >= 2:
            i0, i1 = hull[-2], hull[-1]
            if (g[i1] - g[i0]) * (n[i] - n[i0]) >= (g[i] - g[i0]) * (n[i1] - n[i0]):
                hull.pop()
            else:
                break
        hull.append(i)
    lines = []
    for i0, i1 in itertools.pairwise(hull):
        slope = float(g[i1] - g[i0]) / float(n[i1] - n[i0])
        lines.append((slope, float(g[i0]) - slope * float(n[i0])))
    return lines


def add_network_cuts(m: pyo.ConcreteModel, ix: Index, req: FleetRequest, cat: Catalog) -> None:
    """(14) the network capex of each buy option lies above its convex envelope. In every integer solution of (8)
    X1, X2, X3 and W are at least their exact values for n = O + N nodes (the rows of (8) force them), so the
    NIC, cable and switch capex is at least g(n) >= each line a n + b of the lower convex envelope of g over
    n = O..O + max_nodes. Without owned nodes the line is written a N + b y (b <= 0 as the envelope passes
    through g(0) = 0): at y = 0 no node is bought (N = 0) and the row reads 0 >= 0."""
    rows = []
    for p, f in m.BUY:
        owned = ix.pools.owned_on(p, f)
        for slope, icpt in network_envelope(cat, p, f, owned, req.max_nodes):
            if slope > 1e-9 or icpt > 1e-9:
                rows.append((p, f, slope, icpt, owned))
    srv = {p: cat.server(p) for p in ix.pools.buy}

    def rule(m: pyo.ConcreteModel, i: int) -> Any:
        p, f, slope, icpt, owned = rows[i]
        s, fb = srv[p], cat.fabric(f)
        net = (
            _c(s.nic_ports * fb.nic_price_usd) * m.X1[p, f]
            + _c(s.nic_ports * fb.cable_price_usd) * (m.X1[p, f] + m.X2[p, f] + m.X3[p, f])
            + _c(fb.switch_price_usd) * m.W[p, f]
        )
        if owned == 0:
            return net >= slope * m.N[p, f] + icpt * m.y[p, f]
        return net >= slope * (owned + m.N[p, f]) + icpt

    m.network_envelope = pyo.Constraint(range(len(rows)), rule=rule)


def add_fabric_cover_cuts(m: pyo.ConcreteModel, ix: Index, nodes: np.ndarray) -> None:
    """(15) a multi-node job on fabric f of a type without owned nodes runs on nodes bought on f:
    sum_{m of job j on (p, f)} n_m z_m <= N_pf. In an integer solution only the chosen fabric (y_pf = 1) has
    nodes, so the group's capacity is N_pf; the LP relaxation could otherwise hold the job's nodes on another
    fabric's N."""
    modes = ix.modes
    links: dict[tuple[str, str, str], list[int]] = {}
    for k, (j, kind, p, f) in enumerate(
        zip(modes["job"], modes["kind"], modes["server"], modes["fabric"], strict=True)
    ):
        if kind == "site" and f != ANY_FABRIC and p not in ix.pools.owned_fabrics:
            links.setdefault((j, p, f), []).append(k)
    m.fabric_cover = pyo.Constraint(
        sorted(links),
        rule=lambda m, j, p, f: pyo.quicksum(int(nodes[k]) * m.z[k] for k in links[(j, p, f)]) <= m.N[p, f],
    )


def add_objective(
    m: pyo.ConcreteModel, ix: Index, req: FleetRequest, cat: Catalog, capex: dict[tuple[str, str], Any], rent: Any
) -> None:
    site = cat.site(req.site)
    modes = ix.modes
    e = modes["energy_coef_kwh"].to_numpy(float)
    site_k = np.flatnonzero(modes["kind"].to_numpy() == "site")
    rent_k = np.flatnonzero(modes["kind"].to_numpy() == "rent")
    H = req.slot_hours
    idle = ix.pools.idle_kw
    idle_kwh = pyo.quicksum(idle[p] * H * req.slots * m.N[p, f] for p, f in m.BUY) + pyo.quicksum(
        idle[o.server] * H * sum(o.avail) * m.K[i] for i, o in enumerate(ix.pools.owned)
    )
    site_kwh = pyo.quicksum(float(e[k]) * m.z[int(k)] for k in site_k) + idle_kwh
    energy = site_kwh + pyo.quicksum(float(e[k]) * m.z[int(k)] for k in rent_k)
    # only jobs that may finish late: a zero-price term would leave late[j] out of the solver's model, with no value
    # after a solve for the objective's evaluation (squeeze_start) to read
    penalty = pyo.quicksum(j.penalty_usd_per_slot * m.late[j.id] for j in req.jobs if j.penalty_usd_per_slot)
    if req.objective == "energy":
        obj = energy
    elif req.objective == "carbon":
        obj = site.carbon_kg_per_kwh * energy
    else:
        share = req.slots * H / (req.life_years * cost_mod.HOURS_PER_YEAR)
        obj = share * pyo.quicksum(capex.values()) + site.electricity_usd_per_kwh * site_kwh + rent
    m.objective = pyo.Objective(
        expr=obj + penalty + 1e-6 * pyo.quicksum((t + 1) * m.r[j, t] for (j, t) in m.JT), sense=pyo.minimize
    )


# ------------------------------------------------------------------------------------------------ start
@dataclass
class StartPlan:
    """A complete fleet decision for a start: mode index and slots of every job, nodes bought per (type, fabric)."""

    chosen: dict[str, tuple[int, list[int]]]
    bought: dict[tuple[str, str], int]
    kept: list[int] | None = None  # owned nodes kept per owned entry (None: all)


def greedy_plan(m: pyo.ConcreteModel, cat: Catalog, req: FleetRequest) -> StartPlan | None:
    """A greedy fleet (../shared/SOLVER-NOTES.md): jobs from the largest (fewest node-slots it can take) down,
    each in the mode and least-busy slots that add the least cost (or energy) to the fleet built so far --
    nodes beyond the capacity already bought at their capex share, rent by node-slots, energy at its price --
    keeping every owned node and one fabric per bought type; what is bought is the peak use of each pool.
    Power and budget are not checked here. None when some job has no compatible mode. (Seeding it with the
    LP relaxation's purchase rounded, or ordering jobs by window length, made it worse on bench_fleet.py:
    $3.9-4.9M against $4.18M.)"""
    ix: Index = m.ix
    pools = ix.pools
    modes = ix.modes
    site = cat.site(req.site)
    H = req.slot_hours
    share = req.slots * H / (req.life_years * cost_mod.HOURS_PER_YEAR)
    energy_w = site.electricity_usd_per_kwh if req.objective == "cost" else 1.0
    money_w = 1.0 if req.objective == "cost" else 0.0
    usage: dict[str, np.ndarray] = {}
    bought: dict[tuple[str, str], np.ndarray] = {}  # group capacity bought so far, per (type, fabric)
    fab: dict[str, str] = {}
    owned_cap: dict[str, np.ndarray] = {}
    for e in pools.owned:
        arr = owned_cap.setdefault(pools.site_group(e.server, e.fabric), np.zeros(req.slots))
        arr += np.asarray(e.avail) * e.count
    nodes = modes["nodes"].to_numpy(np.int64)
    d = modes["slots_needed"].to_numpy(np.int64)
    ecoef = modes["energy_coef_kwh"].to_numpy(float)
    kind = modes["kind"].to_numpy()
    server = modes["server"].to_numpy()
    fabric = modes["fabric"].to_numpy()
    group = modes["group"].to_numpy()
    price = {p: (cat.server(p).price_usd or 0.0) for p in pools.buy}
    hourly = {p: (cat.server(p).rent_usd_per_month or 0.0) / cost_mod.HOURS_PER_MONTH for p in pools.rent}
    job_rent = mode_rent_usd(ix, cat)
    chosen: dict[str, tuple[int, list[int]]] = {}
    size = {j: min(int(nodes[k] * d[k]) for k in ks) for j, ks in ix.by_job.items()}
    for job in sorted(req.jobs, key=lambda j: (-size[j.id], j.release_slot, j.id)):
        best: tuple[float, int, list[int]] | None = None
        for k in ix.by_job[job.id]:
            p, f, g = str(server[k]), str(fabric[k]), str(group[k])
            busy = usage.get(g, np.zeros(req.slots))
            slots = sorted(sorted(ix.window[job.id], key=lambda t: (busy[t], t))[: int(d[k])])
            if kind[k] == "rent":
                extra = money_w * (job_rent[k] if p in ix.per_job else hourly[p] * H * int(nodes[k]) * len(slots))
            else:
                needs_y = f != ANY_FABRIC and f not in pools.owned_fabrics.get(p, set())
                if needs_y and fab.get(p, f) != f:
                    continue
                f_buy = f if f != ANY_FABRIC else fab.get(p, pools.buy.get(p, [""])[0])
                cap = owned_cap.get(g, np.zeros(req.slots)) + bought.get((p, f_buy), 0)
                need = usage.get(g, np.zeros(req.slots))[slots] + int(nodes[k]) - cap[slots]
                short = max(0.0, float(need.max()))
                if short > 0 and (f_buy not in pools.buy.get(p, []) or fab.get(p, f_buy) != f_buy):
                    continue
                extra = money_w * short * price.get(p, 0.0) * share
            value = extra + energy_w * float(ecoef[k])
            if best is None or value < best[0]:
                best = (value, k, slots)
        if best is None:
            return None
        _, k, slots = best
        p, f, g = str(server[k]), str(fabric[k]), str(group[k])
        chosen[job.id] = (k, slots)
        arr = usage.setdefault(g, np.zeros(req.slots))
        arr[slots] += int(nodes[k])
        if kind[k] == "site":
            f_buy = f if f != ANY_FABRIC else fab.get(p, pools.buy.get(p, [""])[0])
            short = max(0.0, float((arr - owned_cap.get(g, np.zeros(req.slots))).max()))
            if short > float(bought.get((p, f_buy), np.zeros(1)).max()):
                fab[p] = f_buy
                bought[(p, f_buy)] = np.full(req.slots, short)
    final: dict[tuple[str, str], int] = {}
    for p, f in bought:  # the peak use of each pool
        g = pools.site_group(p, f)
        peak = float((usage.get(g, np.zeros(req.slots)) - owned_cap.get(g, np.zeros(req.slots))).max())
        if peak > 0:
            final[(p, f)] = round(peak)
    return StartPlan(chosen, final)


def set_greedy_start(m: pyo.ConcreteModel, cat: Catalog, req: FleetRequest) -> None:
    """Start HiGHS from the greedy plan (``greedy_plan``); no start when it finds none."""
    plan = greedy_plan(m, cat, req)
    if plan is not None:
        set_plan_start(m, cat, req, plan)
        m.start_feasible = False  # power and budget unchecked: HiGHS decides whether it is a plan


def set_plan_start(m: pyo.ConcreteModel, cat: Catalog, req: FleetRequest, plan: StartPlan) -> None:
    """Give every variable of the MIP its value in ``plan`` (HiGHS keeps the start only if it is feasible)."""
    ix: Index = m.ix
    pools = ix.pools
    modes = ix.modes
    nodes = modes["nodes"].to_numpy(np.int64)
    d = modes["slots_needed"].to_numpy(np.int64)
    kind = modes["kind"].to_numpy()
    group = modes["group"].to_numpy()
    chosen = plan.chosen
    usage: dict[str, np.ndarray] = {}
    for k, slots in chosen.values():
        usage.setdefault(str(group[k]), np.zeros(req.slots))[slots] += int(nodes[k])
    # variable values
    for v in m.component_data_objects(pyo.Var, descend_into=True):
        v.set_value(0, skip_validation=True)
    for i, e in enumerate(pools.owned):
        m.K[i].set_value(e.count if plan.kept is None else plan.kept[i])
    for (p, f), n_bought in plan.bought.items():
        m.N[p, f].set_value(int(n_bought))
        m.y[p, f].set_value(1)
    for j, (k, slots) in chosen.items():
        m.z[k].set_value(1)
        g = str(group[k])
        m.a[j, g].set_value(int(nodes[k]))
        job = next(x for x in req.jobs if x.id == j)
        for t in slots:
            m.r[j, t].set_value(1)
            m.u[j, g, t].set_value(int(nodes[k]))
            if kind[k] == "site":
                m.q[j, t].set_value(float(modes.at[k, "power_coef_kw"]))
        if job.penalty_usd_per_slot is not None:
            m.late[j].set_value(max(0, max(slots) - job.due_slot))
    for p in m.RP:
        arr = usage.get(f"{p}|rent", np.zeros(req.slots))
        for t in range(req.slots):
            m.R[p, t].set_value(int(arr[t]))
        for b, (ts, _count) in enumerate(ix.blocks[p]):
            m.V[p, b].set_value(int(max(arr[t] for t in ts)))
    for p, f in m.BUY:
        s, fb = cat.server(p), cat.fabric(f)
        n = pools.owned_on(p, f) + int(m.N[p, f].value or 0)
        ports, k_radix = s.nic_ports * n, fb.switch_radix
        t2, t3 = int(ports > k_radix), int(2 * ports > k_radix**2)
        leaves = -(-2 * ports // k_radix) if t2 else 0
        for var, val in (
            (m.multi, int(n >= 2)),
            (m.tier2, t2),
            (m.tier3, t3),
            (m.L, leaves),
            (m.S, -(-leaves // 2)),
            (m.A, leaves if t3 else 0),
            (m.W, int(cost_mod.switch_count(n, s.nic_ports, k_radix))),
            (m.X1, n if n >= 2 else 0),
            (m.X2, n if t2 else 0),
            (m.X3, n if t3 else 0),
        ):
            var[p, f].set_value(val)
    if hasattr(m, "e"):  # (13): the node-slots of the chosen modes
        for j, g, o in m.ENER:
            m.e[j, g, o].set_value(
                sum(int(nodes[k]) * max(0, int(d[k]) - o) for k in ix.by_jg[(j, g)] if (m.z[k].value or 0) > 0.5)
            )
    m.warm_start = True


# ------------------------------------------------------------------------------------------------ driver
def _relaxed_solve(m: pyo.ConcreteModel, options: SolverOptions) -> Any:
    """Solve the LP relaxation of m (integer variables continuous within their bounds; no start)."""
    return solve_model(m, options, relax=True)


def _load(m: pyo.ConcreteModel, solved: Any) -> None:
    """Set the model's variables to a solution returned by solve_model."""
    for name, arr in solved.values.items():
        comp = getattr(m, name)
        for i, val in enumerate(arr):
            if not comp[i].fixed:
                comp[i].set_value(float(val), skip_validation=True)
    for name, vals in solved.keyed.items():
        comp = getattr(m, name)
        for idx, val in vals.items():
            comp[idx].set_value(float(val), skip_validation=True)


def restricted_start(m: pyo.ConcreteModel, options: SolverOptions, share: float = RESTRICTED_SHARE) -> dict[str, float]:
    """A better starting solution: solve the LP relaxation (within ``options.time_limit_s``), then the MIP
    restricted to the modes the LP uses (z > RESTRICTED_SUPPORT) and the modes of the current start (the greedy
    plan), with ``share`` of the time limit left after the LP. Every solution of the restricted MIP is a solution
    of the full MIP (the other z are fixed at 0, a value they may take), so HiGHS gets it as a start and checks
    it; the full MIP is then solved from it and its bound, gap and optimality are HiGHS's own on the full model.
    Returns the seconds spent in each solve (lp_s, restricted_s) and the figures (start_objective: the start it
    began from, lp_bound, restricted_objective)."""
    t0 = time.perf_counter()
    out = {"start_objective": float(pyo.value(m.objective))} if getattr(m, "warm_start", False) else {}
    lp = _relaxed_solve(m, options.model_copy(update={"presolve": False}))
    out["lp_s"] = time.perf_counter() - t0
    if "z" not in lp.values or lp.report.objective is None:
        return out
    out["lp_bound"] = lp.report.objective
    out["lp_optimal"] = float(lp.report.status.value == "optimal")
    z_lp = lp.values["z"]
    m.lp_z = z_lp
    keep = z_lp > RESTRICTED_SUPPORT
    if getattr(m, "warm_start", False):
        keep |= np.asarray([(m.z[k].value or 0.0) > 0.5 for k in m.M])
    fixed = [k for k in m.M if not keep[k]]
    for k in fixed:
        m.z[k].fix(0)
    t1 = time.perf_counter()
    try:
        rest = options.time_limit_s - out["lp_s"]
        sub = solve_model(m, options.model_copy(update={"time_limit_s": max(1.0, share * rest)}))
    finally:
        for k in fixed:
            m.z[k].unfix()
    out["restricted_s"] = time.perf_counter() - t1
    if sub.report.status.has_solution and sub.report.objective is not None:
        _load(m, sub)
        m.warm_start = True
        m.start_feasible = True  # a solution of the restricted MIP is a plan of the full MIP
        out["restricted_objective"] = sub.report.objective
    return out


def current_plan(m: pyo.ConcreteModel) -> StartPlan | None:
    """The plan held in the model's variable values (a start or a loaded solution); None if incomplete."""
    ix: Index = m.ix
    chosen = {}
    for j, ks in ix.by_job.items():
        k = next((k for k in ks if (m.z[k].value or 0.0) > 0.5), None)
        if k is None:
            return None
        chosen[j] = (k, [t for t in ix.window[j] if (m.r[j, t].value or 0.0) > 0.5])
    bought = {(p, f): round(m.N[p, f].value or 0.0) for p, f in m.BUY if round(m.N[p, f].value or 0.0) > 0}
    return StartPlan(chosen, bought, [round(m.K[i].value or 0.0) for i in m.E])


def squeeze_start(
    m: pyo.ConcreteModel, cat: Catalog, req: FleetRequest, options: SolverOptions, lp_z: np.ndarray | None
) -> dict[str, float]:
    """A better start by buying one node fewer of the type that costs the most (a large-neighbourhood step).
    From the current start, the bought type p with the largest capex gets N_p <= n - 1 (n its nodes now), in a
    MIP over a subset of the modes: the LP relaxation's support (``lp_z``), the start's modes, each job's
    SQUEEZE_TOP_MODES cheapest by a standalone estimate (capex share of its node-slots plus energy); the jobs
    that ran on p on two or more nodes keep only their modes on p with the most nodes that fit n - 1 -- so that
    jobs that ran side by side on n nodes run one after another on all of the fewer (HiGHS found no plan
    within 20 s when they kept every mode on p). It is the full MIP with modes left out and one row added, so
    each of its plans is a plan of the full MIP; it replaces the start only when cheaper, and then the next type
    is squeezed (a type squeezed with success again after the others), within ``options.time_limit_s`` in all.
    Measured on bench_fleet.py (50 jobs): the restricted start buys 4 GB200 NVL72 racks ($3.35M); squeezed to 3
    racks the five 70B pre-training runs go one after another on 3 racks ($3.09M). Returns squeeze_s,
    squeeze_objective (the start after it, reported only when it is a plan: a solution of the restricted or a
    squeeze MIP; the greedy start leaves power and budget unchecked) and squeeze_steps (squeezes that made it
    cheaper)."""
    t0 = time.perf_counter()
    ix: Index = m.ix
    modes = ix.modes
    out: dict[str, float] = {"squeeze_steps": 0.0}
    site = cat.site(req.site)
    share = req.slots * req.slot_hours / (req.life_years * cost_mod.HOURS_PER_YEAR)
    price = np.asarray([cat.server(p).price_usd or 0.0 for p in modes["server"]])
    nodes = modes["nodes"].to_numpy(np.int64)
    weight = site.electricity_usd_per_kwh if req.objective == "cost" else 1.0
    money = 1.0 if req.objective == "cost" else 0.0
    estimate = money * share * price * nodes * modes["slots_needed"].to_numpy() / req.slots
    estimate = estimate + weight * modes["energy_coef_kwh"].to_numpy(float)
    rank = pd.Series(estimate).groupby(modes["job"].to_numpy()).rank(method="first").to_numpy()
    base = rank <= SQUEEZE_TOP_MODES
    if lp_z is not None:
        base |= lp_z > RESTRICTED_SUPPORT
    tried: set[str] = set()
    again: set[str] = set()
    while True:
        left = options.time_limit_s - (time.perf_counter() - t0)
        plan = current_plan(m)
        if plan is None or left < 1.0 or not getattr(m, "warm_start", False):
            break
        # a start not known to be a plan (the greedy's: power and budget unchecked) is beaten by any plan
        value = float(pyo.value(m.objective)) if getattr(m, "start_feasible", False) else math.inf
        capex: dict[str, tuple[float, int]] = {}
        for (p, f), n in plan.bought.items():
            usd = owned_capex_usd(cat, p, f, ix.pools.owned_on(p, f), n)[0]
            old = capex.get(p, (0.0, 0))
            capex[p] = (old[0] + usd, old[1] + n)
        todo = sorted((usd, p) for p, (usd, _n) in capex.items() if p not in tried)
        if not todo and again:  # a type squeezed with success is tried again after the others
            tried -= again
            again.clear()
            todo = sorted((usd, p) for p, (usd, _n) in capex.items() if p not in tried)
        if not todo:
            break
        p = todo[-1][1]
        cap = capex[p][1] - 1
        # the jobs that ran on p on two or more nodes: only their modes on p with the most nodes that fit the cap
        # (they run one after another on all of them); every other job: base modes and its start mode
        keep = base.copy()
        keep[[k for k, _s in plan.chosen.values()]] = True
        limit = cap + sum(e.count for e in ix.pools.owned if e.server == p)
        for j, (k, _s) in plan.chosen.items():
            if modes.at[k, "server"] != p or modes.at[k, "kind"] != "site" or nodes[k] < 2:
                continue
            ks = np.asarray([q for q in ix.by_job[j] if modes.at[q, "server"] == p and modes.at[q, "kind"] == "site"])
            fit = ks[nodes[ks] <= limit]
            if len(fit):
                keep[ix.by_job[j]] = False
                keep[fit[nodes[fit] == nodes[fit].max()]] = True
        sub_idx = np.flatnonzero(keep)
        sub = build_fleet_model(cat, req, modes.iloc[sub_idx], ix.pools)
        sub.squeeze = pyo.Constraint(expr=pyo.quicksum(sub.N[p, f] for f in ix.pools.buy[p]) <= cap)
        left = options.time_limit_s - (time.perf_counter() - t0)  # the build above came out of it
        if left < 1.0:
            break
        solved = solve_model(sub, options.model_copy(update={"time_limit_s": left}))
        tried.add(p)
        obj = solved.report.objective
        if not solved.report.status.has_solution or obj is None or obj >= value - 1e-6 * max(1.0, abs(obj)):
            continue
        _load(sub, solved)
        found = current_plan(sub)
        if found is None:
            continue
        chosen = {j: (int(sub_idx[k]), slots) for j, (k, slots) in found.chosen.items()}
        set_plan_start(m, cat, req, StartPlan(chosen, found.bought, found.kept))
        m.start_feasible = True
        out["squeeze_steps"] += 1
        again.add(p)
    out["squeeze_s"] = time.perf_counter() - t0
    if getattr(m, "warm_start", False) and getattr(m, "start_feasible", False):
        out["squeeze_objective"] = float(pyo.value(m.objective))
    return out


def _plan_value(cat: Catalog, req: FleetRequest, ix: Index, plan: StartPlan) -> float | None:
    """The exact value of a complete plan (``evaluate_fleet``: the objective without the tie-break), None when it
    breaks a rule."""
    modes = ix.modes
    chosen = {j: modes.loc[k] for j, (k, _s) in plan.chosen.items()}
    slots = {j: s for j, (_k, s) in plan.chosen.items()}
    kept = plan.kept if plan.kept is not None else [e.count for e in ix.pools.owned]
    ev = evaluate_fleet(cat, req, ix.pools, chosen, slots, plan.bought, kept)
    return None if ev is None else float(ev["value"])


def _mode_arrays(modes: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(nodes, slots needed, kind, server, fabric, energy coefficient in kWh) of every mode, as arrays."""
    return (
        modes["nodes"].to_numpy(np.int64),
        modes["slots_needed"].to_numpy(np.int64),
        modes["kind"].to_numpy(),
        modes["server"].to_numpy(),
        modes["fabric"].to_numpy(),
        modes["energy_coef_kwh"].to_numpy(float),
    )


def _objective_weights(cat: Catalog, req: FleetRequest) -> tuple[float, bool, float]:
    """(the horizon's share of a bought server's life, whether the objective is cost, the objective's weight per
    kWh: USD, 1 for energy, kg for carbon) -- how the start heuristics price a cluster and a mode."""
    site = cat.site(req.site)
    share = req.slots * req.slot_hours / (req.life_years * cost_mod.HOURS_PER_YEAR)
    cost_obj = req.objective == "cost"
    e_w = site.electricity_usd_per_kwh if cost_obj else 1.0 if req.objective == "energy" else site.carbon_kg_per_kwh
    return share, cost_obj, e_w


def flatten_start(m: pyo.ConcreteModel, cat: Catalog, req: FleetRequest, time_limit_s: float) -> dict[str, float]:
    """A better start by local search on the current one (in ``fleet()``: the restricted MIP's plan, before
    ``squeeze_start``; or the greedy plan when ``evaluate_fleet`` finds it within every rule): a bought site
    cluster is paid for its peak use, so each job on it in turn is moved to the mode of that cluster (same type;
    the fabric it is bought on, or a one-node mode) and the slots of its window that make the cluster's
    (capex share + idle energy) + the job's energy and lateness least, the other jobs held where they are: for a
    mode of n nodes and d slots the best slots are the d least busy of the window (earliest first), which give
    the cluster a peak of max(busiest slot of the others, d-th least busy + n). A move is made only when it keeps
    the cluster within ``max_nodes`` and the site's power (jobs above idle + idle power of every node bought or
    kept, the resized cluster's included) within the envelope in every slot, so every move made is kept: each
    intermediate plan is a plan. Rounds repeat while one lowers the cost, within ``time_limit_s``. Clusters
    holding owned nodes, rentals and budget are left alone (their jobs stay). The result replaces the start only
    when ``evaluate_fleet`` finds it a plan (capacity, fabric, power, budget) of lower value, so it is a plan of
    the full MIP. Returns flatten_s, and flatten_objective (the start's value after it) and flatten_moves (jobs
    moved) when it improved the start."""
    t0 = time.perf_counter()
    ix: Index = m.ix
    out: dict[str, float] = {}
    plan = current_plan(m)
    # a start not known to be a plan (the greedy's) is one when evaluate_fleet finds it within every rule
    before = _plan_value(cat, req, ix, plan) if plan is not None and req.budget_usd is None else None
    if plan is None or before is None:
        out["flatten_s"] = time.perf_counter() - t0
        return out
    modes = ix.modes
    nodes, d, kind, server, fabric, e_coef = _mode_arrays(modes)
    H = req.slot_hours
    share, cost_obj, e_w = _objective_weights(cat, req)
    p_coef = modes["power_coef_kw"].to_numpy(float)
    jobs = {j.id: j for j in req.jobs}
    chosen = dict(plan.chosen)
    bought = dict(plan.bought)
    # site power per slot as evaluate_fleet adds it: the jobs above idle, and the idle power of every node bought
    # or kept; each move is checked against the envelope (and its cluster against max_nodes) before it is made
    envelope = req.power_kw if req.power_kw is not None else cat.site(req.site).power_envelope_kw
    envelope = envelope * (1 + 1e-9) + 1e-9
    power = np.zeros(req.slots)
    for k, sl in chosen.values():
        power[sl] += p_coef[k]
    for (p, _f), n in bought.items():
        power += ix.pools.idle_kw[p] * n
    kept = plan.kept if plan.kept is not None else [e.count for e in ix.pools.owned]
    for i, e in enumerate(ix.pools.owned):
        power += ix.pools.idle_kw[e.server] * np.asarray(e.avail) * kept[i]
    fab_of = {p: f for (p, f), n in bought.items() if n > 0}
    # clusters without owned nodes, bought on one fabric: their jobs may move
    movable = {p: f for p, f in fab_of.items() if p not in ix.pools.owned_fabrics}

    def cluster_usd(p: str, f: str, n: int) -> float:
        capex = owned_capex_usd(cat, p, f, 0, n)[0] if n > 0 else 0.0
        idle = ix.pools.idle_kw[p] * H * req.slots * n * e_w
        return (share * capex if cost_obj else 0.0) + idle

    def late_usd(j: str, last: int) -> float:
        job = jobs[j]
        return (job.penalty_usd_per_slot or 0.0) * max(0, last - job.due_slot)

    moves = 0
    improved = True
    while improved and time.perf_counter() - t0 < time_limit_s:
        improved = False
        for p, f in movable.items():
            on_p = [j for j, (k, _s) in chosen.items() if kind[k] == "site" and server[k] == p]
            usage = np.zeros(req.slots)
            for j in on_p:
                k, sl = chosen[j]
                usage[sl] += nodes[k]
            for j in sorted(on_p, key=lambda j: -nodes[chosen[j][0]]):
                k0, sl0 = chosen[j]
                other = usage.copy()
                other[sl0] -= nodes[k0]
                win = np.asarray(ix.window[j])
                order = win[np.lexsort((win, other[win]))]  # least busy slots of the window, earliest first
                cand = np.asarray(
                    [
                        k
                        for k in ix.by_job[j]
                        if kind[k] == "site" and server[k] == p and fabric[k] in (f, ANY_FABRIC) and d[k] <= len(win)
                    ],
                    dtype=np.int64,
                )  # holds the job's current mode (a plan's mode is on its cluster's fabric or one node)
                peak_other = float(other.max())
                peak = np.maximum(peak_other, other[order][d[cand] - 1] + nodes[cand])
                have = bought.get((p, f), 0)
                power_other = power.copy()  # the site's power without this job, at the cluster's current size
                power_other[sl0] -= p_coef[k0]
                best = (cluster_usd(p, f, have) + e_w * e_coef[k0] + late_usd(j, max(sl0)), k0, sl0, have)
                for i in np.argsort(peak + 1e-9 * e_coef[cand], kind="stable")[:64]:
                    k = int(cand[i])
                    n_new = round(float(peak[i]))
                    if n_new > req.max_nodes:
                        continue
                    sl = sorted(int(t) for t in order[: d[k]])
                    usd = cluster_usd(p, f, n_new) + e_w * e_coef[k] + late_usd(j, sl[-1])
                    if usd >= best[0] - 1e-6 * max(1.0, abs(best[0])):
                        continue
                    moved = power_other + ix.pools.idle_kw[p] * (n_new - have)
                    moved[sl] += p_coef[k]
                    if (moved > envelope).any():
                        continue
                    best = (usd, k, sl, n_new)
                if best[1] != k0 or best[2] != sl0 or best[3] != have:
                    k, sl, n_new = best[1], best[2], best[3]
                    usage = other
                    usage[sl] += nodes[k]
                    power = power_other + ix.pools.idle_kw[p] * (n_new - have)
                    power[sl] += p_coef[k]
                    chosen[j] = (k, sl)
                    bought[(p, f)] = n_new
                    moves += 1
                    improved = True
            top = round(float(usage.max()))  # a cluster bought above its peak use sheds the rest (less power)
            if top < bought.get((p, f), 0):
                power -= ix.pools.idle_kw[p] * (bought[(p, f)] - top)
                bought[(p, f)] = top
        if time.perf_counter() - t0 >= time_limit_s:
            break
    new = StartPlan(chosen, {pf: n for pf, n in bought.items() if n > 0}, plan.kept)
    after = _plan_value(cat, req, ix, new)
    if moves and after is not None and before is not None and after < before - 1e-9 * max(1.0, abs(before)):
        set_plan_start(m, cat, req, new)
        m.start_feasible = True
        out["flatten_objective"] = float(pyo.value(m.objective))
        out["flatten_moves"] = float(moves)
    out["flatten_s"] = time.perf_counter() - t0
    return out


def _pack_cluster(
    cands: dict[str, np.ndarray],
    nodes: np.ndarray,
    d: np.ndarray,
    window: dict[str, np.ndarray],
    slots: int,
    cap: int,
    order: list[str],
    iters: int,
    rng: np.random.Generator,
    deadline: float = math.inf,
) -> dict[str, tuple[int, list[int]]] | None:
    """Every job of ``order`` on one cluster of ``cap`` nodes, or None (also when ``time.perf_counter()`` passes
    ``deadline``): each job in one of its modes ``cands[j]``
    on d_k of its window's slots, at most ``cap`` nodes busy in any slot (min-conflicts repair with breakout
    weights). Jobs are placed in order, each in the mode and slots that add the least weighted overload (nodes
    above ``cap`` times the slot's weight, every weight 1 at first), then the least node-slots; then, while a slot
    is overloaded, the weight of every overloaded slot grows by 1 (so that the search leaves a local minimum by
    clearing the slots that stay overloaded) and a job running in one is taken out and placed again the same way
    -- in PACK_PAIR of the moves together with another job running in that slot, the two placed again in random
    order; in PACK_NOISE of the placements in a random mode on its least busy slots -- for at most ``iters``
    moves. Measured on bench_fleet.py (50 jobs, the six cheapest options, refine at 20,000 moves): the
    weights and pair moves found type-10 on hdr200 at 29 nodes and on ndr400 at 28, where single moves
    stopped at 30 and 29 (40,000 single moves did no better than 4,000)."""
    usage = np.zeros(slots)
    weight = np.ones(slots)
    fit = {j: ks[nodes[ks] <= cap] for j, ks in cands.items()}
    if any(not len(ks) for ks in fit.values()):
        return None
    chosen: dict[str, tuple[int, np.ndarray]] = {}

    def place(j: str, noisy: bool) -> tuple[int, np.ndarray]:
        ks, win = fit[j], window[j]
        u = usage[win]
        if noisy:
            k = int(ks[rng.integers(len(ks))])
            return k, win[np.argsort(u + 0.5 * rng.random(len(u)), kind="stable")[: d[k]]]
        n = nodes[ks][:, None]
        w = weight[win]
        marg = (np.maximum(0.0, u[None, :] + n - cap) - np.maximum(0.0, u - cap)[None, :]) * w[None, :]
        over = np.take_along_axis(np.cumsum(np.sort(marg, axis=1), axis=1), (d[ks] - 1)[:, None], axis=1)[:, 0]
        k = int(ks[np.lexsort((nodes[ks] * d[ks], over))[0]])
        m_k = (np.maximum(0.0, u + nodes[k] - cap) - np.maximum(0.0, u - cap)) * w
        return k, win[np.lexsort((win, u, m_k))[: d[k]]]  # least overload, then least busy, then earliest

    for j in order:
        k, sl = place(j, False)
        usage[sl] += nodes[k]
        chosen[j] = (k, sl)
    for it in range(iters + 1):
        over = usage > cap
        if not over.any():
            return {j: (k, sorted(int(t) for t in sl)) for j, (k, sl) in chosen.items()}
        if it % 64 == 0 and time.perf_counter() > deadline:
            return None
        weight[over] += 1.0
        bad = [j for j in order if over[chosen[j][1]].any()]
        j = bad[int(rng.integers(len(bad)))]
        group = [j]
        if rng.random() < PACK_PAIR:  # and another job busy in one of its overloaded slots
            sl = chosen[j][1]
            t = int(sl[over[sl]][0])
            others = [i for i in order if i != j and t in chosen[i][1]]
            if others:
                group.append(others[int(rng.integers(len(others)))])
                rng.shuffle(group)
        for i in group:
            k, sl = chosen[i]
            usage[sl] -= nodes[k]
        for i in group:
            k, sl = place(i, rng.random() < PACK_NOISE)
            usage[sl] += nodes[k]
            chosen[i] = (k, sl)
    return None


def cluster_fits(
    cands: dict[str, np.ndarray],
    nodes: np.ndarray,
    d: np.ndarray,
    window: dict[str, np.ndarray],
    cap: int,
    time_limit_s: float,
) -> tuple[bool | None, dict[str, tuple[int, list[int]]] | None]:
    """Whether every job runs on one cluster of ``cap`` nodes, asked of HiGHS exactly (what ``_pack_cluster``
    searches for by repair): (False, None) when HiGHS proves that no packing exists, (True, packing) when it finds
    one (the same form as ``_pack_cluster``'s), (None, None) when it decides neither within ``time_limit_s``.

    The time-indexed feasibility MIP: z_k in {0, 1} job j runs in mode k (k in cands[j]); y_kt in {0, 1} mode k
    runs in slot t (t in window[j]):  (a) sum_{k in cands[j]} z_k = 1 for each job;  (b) sum_t y_kt = d_k z_k for
    each mode;  (c) sum_k n_k y_kt <= cap for each slot;  (d) y_kt <= z_k (implied by (b) in integers; it
    tightens the LP relaxation HiGHS bounds with). Its integer points are exactly
    the packings (each job in one mode on d_k distinct slots of its window, no slot over cap); the coefficients are
    small integers. Measured on bench_fleet.py's 50 jobs: type-10 on hdr200 at 28 nodes proved infeasible in
    1.98 s (load ~1; a variant with an energy objective, fleet.py docstring (ix), in 1.0 s); at undecided sizes it
    rarely finds a packing within seconds, where the repair search does. HiGHS runs with the thread count of the
    process's earlier solves (``solver.process_threads``: its thread pool is process-wide, and another count here
    failed the solve, review 10b); a solve that errs is undecided."""
    import highspy

    jobs = list(cands)
    if not jobs:
        return True, {}
    if any(not len(cands[j]) for j in jobs):  # a job with no mode runs on no cluster
        return False, None
    ks = np.concatenate([np.asarray(cands[j], dtype=np.int64) for j in jobs])
    n_z = len(ks)
    y_mode: list[int] = []  # z column of each y column
    y_slot: list[int] = []
    starts = [0]
    for j in jobs:
        for _k in cands[j]:
            y_mode += [len(starts) - 1] * len(window[j])
            y_slot += [int(t) for t in window[j]]
            starts.append(len(y_mode))
    n_y = len(y_mode)
    rows_lo: list[float] = []
    rows_hi: list[float] = []
    idx: list[np.ndarray] = []
    val: list[np.ndarray] = []
    col = 0
    for j in jobs:  # (a)
        m_j = len(cands[j])
        idx.append(np.arange(col, col + m_j))
        val.append(np.ones(m_j))
        rows_lo.append(1.0)
        rows_hi.append(1.0)
        col += m_j
    for i in range(n_z):  # (b): sum_t y - d_k z = 0
        ys = np.arange(n_z + starts[i], n_z + starts[i + 1])
        idx.append(np.concatenate([ys, [i]]))
        val.append(np.concatenate([np.ones(len(ys)), [-float(d[ks[i]])]]))
        rows_lo.append(0.0)
        rows_hi.append(0.0)
    y_mode_a, y_slot_a = np.asarray(y_mode, dtype=np.int64), np.asarray(y_slot, dtype=np.int64)
    for c in range(n_y):  # (d) y_kt <= z_k: implied by (b) in integers, it tightens the LP relaxation
        idx.append(np.asarray([n_z + c, y_mode_a[c]]))
        val.append(np.asarray([1.0, -1.0]))
        rows_lo.append(-highspy.kHighsInf)
        rows_hi.append(0.0)
    for t in np.unique(y_slot_a):  # (c)
        ys = np.flatnonzero(y_slot_a == t)
        idx.append(n_z + ys)
        val.append(nodes[ks[y_mode_a[ys]]].astype(float))
        rows_lo.append(-highspy.kHighsInf)
        rows_hi.append(float(cap))
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", max(0.01, float(time_limit_s)))
    threads = process_threads()
    if threads is not None:  # the pool's own count: another one fails the solve (review 10b)
        h.setOptionValue("threads", threads)
    n = n_z + n_y
    h.addVars(n, np.zeros(n), np.ones(n))
    h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.full(n, highspy.HighsVarType.kInteger))
    counts = np.asarray([len(i) for i in idx], dtype=np.int32)
    h.addRows(
        len(idx),
        np.asarray(rows_lo),
        np.asarray(rows_hi),
        int(counts.sum()),
        np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32),
        np.concatenate(idx).astype(np.int32),
        np.concatenate(val),
    )
    if h.run() == highspy.HighsStatus.kError:
        return None, None
    status = h.getModelStatus()
    if status == highspy.HighsModelStatus.kInfeasible:
        return False, None
    if h.getInfo().primal_solution_status != 2:  # no feasible point (kSolutionStatusFeasible = 2)
        return None, None
    x = np.asarray(h.getSolution().col_value)
    out: dict[str, tuple[int, list[int]]] = {}
    i = 0
    for j in jobs:
        for k in cands[j]:
            if x[i] > 0.5:
                sl = sorted(int(y_slot_a[c]) for c in range(starts[i], starts[i + 1]) if x[n_z + c] > 0.5)
                out[j] = (int(k), sl)
            i += 1
    return True, out


def _earliest_due_first(
    packed: dict[str, tuple[int, list[int]]],
    nodes: np.ndarray,
    d: np.ndarray,
    window: dict[str, np.ndarray],
    jobs: dict[str, Job],
    slots: int,
    cap: int,
    late_usd: Any,
) -> dict[str, tuple[int, list[int]]]:
    """The packing re-laid in earliest-due-first order (penalised jobs first among equal due slots), each job's
    mode kept and put on the earliest slots of its window with room for it within ``cap`` nodes; returned when
    every job fits and the lateness it pays is lower, else the packing as it was. The repair search places jobs
    wherever they fit, so a job with a penalty may wait behind one that could have run later."""
    usage = np.zeros(slots)
    out: dict[str, tuple[int, list[int]]] = {}
    for j in sorted(packed, key=lambda j: (jobs[j].due_slot, -(jobs[j].penalty_usd_per_slot or 0.0), j)):
        k = packed[j][0]
        win = window[j]
        sl = [int(t) for t in win[cap - usage[win] >= nodes[k]][: d[k]]]
        if len(sl) < d[k]:
            return packed
        out[j] = (k, sl)
        usage[sl] += nodes[k]
    before = sum(late_usd(j, max(sl)) for j, (_k, sl) in packed.items())
    after = sum(late_usd(j, max(sl)) for j, (_k, sl) in out.items())
    return out if after < before - 1e-9 * max(1.0, before) else packed


def pack_size_bound(area: dict[str, int], fewest: int, window: dict[str, np.ndarray]) -> int:
    """A lower bound on the nodes of any cluster that runs every job (the energetic-interval reasoning of cut (13)):
    the jobs whose windows lie inside an interval I = [a, b] run all their node-slots in it, at least ``area[j]``
    each (their modes' fewest node-slots), so a cluster of n nodes needs n |I| >= sum of those areas; the bound is
    the largest ceil(sum / |I|) over the intervals from a window start to a window end, and at least ``fewest``
    (the largest job's fewest nodes). The whole horizon is one such interval, so it is never below the fluid bound
    ceil(sum of areas / slots). Windows are runs of consecutive slots."""
    jobs = list(area)
    if not jobs:
        return fewest
    rel = np.asarray([int(window[j][0]) for j in jobs], dtype=np.int64)
    end = np.asarray([int(window[j][-1]) for j in jobs], dtype=np.int64)
    a_j = np.asarray([area[j] for j in jobs], dtype=np.int64)
    ends = np.unique(end)
    best = fewest
    for a in np.unique(rel):
        b = ends[ends >= a]
        inside = (rel[None, :] >= a) & (end[None, :] <= b[:, None])  # interval x job: the job's window in [a, b]
        need = inside.astype(np.int64) @ a_j
        best = max(best, int((-(-need // (b - a + 1))).max()))
    return best


def smallest_packing(packs: Any, lo: int, hi: int, in_time: Any) -> tuple[int, Any] | None:
    """The smallest size in [lo, hi] at which ``packs(size)`` finds a packing (not None), and that packing, by
    galloping up from ``lo`` (lo, lo + 1, lo + 3, lo + 7, ..., hi last: the step doubles) to the first size that
    packs, then bisecting between it and the last size that did not; None when no size up to ``hi`` packs or
    ``in_time()`` turns false before one does (when it turns false while bisecting, the smallest size found so far
    is returned). ``packs`` is a
    repair search that may fail at a size where a packing exists, so the size is the smallest found, not proved:
    about 2 log2(size - lo) tries instead of size - lo climbing one at a time."""
    failed, cap, step = lo - 1, lo, 1
    found: tuple[int, Any] | None = None
    while cap <= hi and in_time():
        got = packs(cap)
        if got is not None:
            found = (cap, got)
            break
        failed = cap
        if cap == hi:
            return None
        cap, step = min(hi, cap + step), 2 * step
    if found is None:
        return None
    while found[0] - failed > 1 and in_time():
        mid = (failed + found[0]) // 2
        got = packs(mid)
        if got is None:
            failed = mid
        else:
            found = (mid, got)
    return found


def cluster_value(cat: Catalog, req: FleetRequest, ix: Index, p: str, f: str, n: int) -> float:
    """What a bought cluster of n nodes of type p on fabric f adds to the objective (``evaluate_fleet``'s value): its
    capex (servers, NICs, cables, switches, as cost.py prices them) times the horizon's share of its life when the
    objective is cost, plus the idle energy of its nodes over the horizon at the objective's weight per kWh. It
    never decreases with n (every capex term grows with the node count)."""
    share, cost_obj, e_w = _objective_weights(cat, req)
    capex = share * owned_capex_usd(cat, p, f, 0, n)[0] if cost_obj and n > 0 else 0.0
    return capex + e_w * ix.pools.idle_kw[p] * req.slot_hours * req.slots * n


@dataclass(frozen=True)
class PackProof:
    """What ``pack_start`` proved of the packed plan it set as the start: no cluster of ``server`` on ``fabric``
    smaller than ``nodes`` runs every job in its window (HiGHS, ``cluster_fits``), so every plan that runs them all
    on one such cluster is worth at least ``bound`` (the cluster's value at that size plus each job's least
    energy, in the objective's unit)."""

    server: str
    fabric: str
    nodes: int
    bound: float


@dataclass
class PackOption:
    """One bought cluster that may run every job (``pack_start``): type and fabric, each job's modes on it, the
    fewest nodes any packing needs (``pack_size_bound``), the least energy value of the jobs, and ``bound`` =
    cluster_value at that size + that energy: no plan that runs every job on this cluster is below it (the cluster
    is at least that large and its value grows with size; each job's mode draws at least its least energy; lateness
    adds)."""

    bound: float
    server: str
    fabric: str
    cands: dict[str, np.ndarray]
    size_bound: int
    energy: float


def pack_options(m: pyo.ConcreteModel, cat: Catalog, req: FleetRequest, deadline: float = math.inf) -> list[PackOption]:
    """Every buy option (p, f) of a type without owned nodes on which every job has a site mode (on f, or one node
    of p: its "any"-fabric mode), cheapest ``bound`` first; only the options bounded before ``time.perf_counter()``
    passes ``deadline`` (0.3 s for 126 options at 50 jobs)."""
    ix: Index = m.ix
    nodes, d, kind, server, fabric, e_coef = _mode_arrays(ix.modes)
    _share, _cost_obj, e_w = _objective_weights(cat, req)
    window = {j: np.asarray(ts, dtype=np.int64) for j, ts in ix.window.items()}
    by_job = {j: np.asarray(ks, dtype=np.int64) for j, ks in ix.by_job.items()}
    site_k = kind == "site"
    options = []
    for p, fabs in ix.pools.buy.items():
        if p in ix.pools.owned_fabrics:
            continue
        if time.perf_counter() >= deadline:
            break
        for f in fabs:
            on = site_k & (server == p) & ((fabric == f) | (fabric == ANY_FABRIC))
            cands = {j: ks[on[ks]] for j, ks in by_job.items()}
            if any(not len(ks) for ks in cands.values()):
                continue
            area = {j: int(np.min(nodes[ks] * d[ks])) for j, ks in cands.items()}
            lb = pack_size_bound(area, max(int(np.min(nodes[ks])) for ks in cands.values()), window)
            energy = sum(float(np.min(e_w * e_coef[ks])) for ks in cands.values())
            options.append(PackOption(cluster_value(cat, req, ix, p, f, lb) + energy, p, f, cands, lb, energy))
    options.sort(key=lambda o: (o.bound, o.server, o.fabric))
    return options


def pack_start(m: pyo.ConcreteModel, cat: Catalog, req: FleetRequest, time_limit_s: float) -> dict[str, float]:
    """A start that runs every job on one bought cluster of as few nodes as it can pack them into.

    The buy options (p, f) of types without owned nodes on which every job has a mode (on f, or one node of p) are
    ranked by a lower bound on the value of any plan that runs every job on them (``pack_options``: the cluster's
    capex share and idle energy at the energetic-interval size bound ``pack_size_bound`` -- the jobs whose windows
    lie in [a, b] need their fewest node-slots within it -- plus each job's least energy). (1) Of the PACK_OPTIONS
    cheapest, each whose bound is below the best plan in hand (the start, or a packing found) is packed
    (``_pack_cluster``): from its size bound the cluster size gallops up (step doubling) to the first size at which
    the jobs pack and is bisected back between it and the last that did not (``smallest_packing``, PACK_ITERS
    repair moves per size). Climbing one node at a time from the windowless fluid bound, 200 one-node one-slot jobs
    all due in slot 1 of 52 (need 100 nodes, fluid bound 4) took 11.8 s and found no plan within 2 s (review 8,
    finding 2); their bound is 100 and the first size tried packs. (2) With the time left, the packed options are
    searched again one node smaller (a fresh search of PACK_REFINE_ITERS moves), the option with the fewest failed
    searches at its size first, then the one whose plan one node smaller would be cheapest; an option leaves when
    it is at its size bound, failed PACK_RETRIES times at a size, or when the bound at one node fewer (cluster
    value at that size + the jobs' least energy) is not below the best plan in hand -- so packing ends early where
    it cannot win. At each size found each job in turn is moved to the mode that costs least (energy, lateness)
    on the earliest slots with room for it, so the cluster stays within that size and a job with a penalty is as
    little late as the others allow.
    Owned nodes are retired, nothing is rented. The best packed plan by ``evaluate_fleet`` (capacity, fabric,
    power, budget; exact prices) replaces the start when it is cheaper than the start (or the start is not known
    to be a plan), so it is a plan of the full MIP. Why: the other starts buy clusters at their peak use, and
    their MIPs rarely lower a peak (a smaller cluster needs every job on it rescheduled at once); measured on
    bench_fleet.py (50 jobs), 33 nodes at 56% mean use. Session 10 (bench_fleet.py, 50 jobs, from the greedy start,
    one run each): four options ranked by a fluid estimate and searched down one node at a time right away gave
    32 x type-24 on hdr200 ($2,354,797 in 8.4 s of a 60 s call); ranked by the bound, all packed once first, then
    searched again where most promising, with breakout weights and pair moves in the repair (``_pack_cluster``):
    29 x type-10 on hdr200, $2,302,183, ending by itself after 5-8 s (type-10 on hdr200 is 6th by the fluid
    estimate, 3rd by the bound). At 20 jobs, after the squeeze's $975,997, it ends after 2-4 s (no option can win
    by one node fewer). Returns pack_s, and pack_objective (the start's value after it), pack_nodes (cluster size)
    when it improved the start, and pack_min_proved (1.0) when that size is proved the fewest of its option --
    by its window bound or by HiGHS (``cluster_fits``, asked once per size when a repair search one node below
    the best packing's cluster fails) -- with the proof in ``m.pack_proof`` (``PackProof``; ``FleetPlan.proofs``
    says it)."""
    t0 = time.perf_counter()
    deadline = t0 + time_limit_s
    ix: Index = m.ix
    out: dict[str, float] = {}
    if time_limit_s <= 0:
        out["pack_s"] = 0.0
        return out
    modes = ix.modes
    nodes, d, _kind, _server, _fabric, e_coef = _mode_arrays(modes)
    _share, _cost_obj, e_w = _objective_weights(cat, req)
    window = {j: np.asarray(ts, dtype=np.int64) for j, ts in ix.window.items()}
    jobs = {j.id: j for j in req.jobs}

    def cluster_usd(p: str, f: str, n: int) -> float:
        return cluster_value(cat, req, ix, p, f, n)

    options = pack_options(m, cat, req, deadline)  # bounded within the limit too (review 10: 0.3 s at 50 jobs)
    plan = current_plan(m)
    before = _plan_value(cat, req, ix, plan) if plan is not None else None
    rng = np.random.default_rng(0)

    def in_time() -> bool:
        return time.perf_counter() < deadline

    def late_usd(j: str, last: int) -> float:
        return (jobs[j].penalty_usd_per_slot or 0.0) * max(0, last - jobs[j].due_slot)

    def finish(
        p: str,
        f: str,
        cands: dict[str, np.ndarray],
        order: list[str],
        cap: int,
        packed: dict[str, tuple[int, list[int]]],
    ) -> tuple[float, StartPlan] | None:
        """The packing at ``cap`` nodes with each job moved to its cheapest mode that keeps the cluster within cap,
        priced by evaluate_fleet (None when it breaks a rule: power, budget)."""
        packed = _earliest_due_first(packed, nodes, d, window, jobs, req.slots, cap, late_usd)
        usage = np.zeros(req.slots)
        for k, sl in packed.values():
            usage[sl] += nodes[k]
        moved = True
        while moved and in_time():  # rounds while a job moves (each move saves)
            moved = False
            for j in order:  # cheapest mode and slots that keep the cluster within cap, the others held
                k0, sl0 = packed[j]
                usage[sl0] -= nodes[k0]
                win = window[j]
                free = cap - usage[win]
                top = np.sort(free)[::-1]
                ks = cands[j][nodes[cands[j]] <= top[np.minimum(d[cands[j]], len(win)) - 1]]
                pick = (e_w * e_coef[k0] + late_usd(j, max(sl0)), k0, sl0)
                for k in ks:
                    # the earliest d slots with room for the mode's nodes: within cap, and the least lateness
                    sl = [int(t) for t in win[free >= nodes[k]][: d[k]]]
                    usd = e_w * e_coef[k] + late_usd(j, sl[-1])
                    if usd < pick[0] - 1e-9 * max(1.0, abs(pick[0])):
                        pick = (usd, int(k), sl)
                moved = moved or pick[1] != k0
                packed[j] = (pick[1], pick[2])
                usage[pick[2]] += nodes[pick[1]]
        found = StartPlan(packed, {(p, f): round(float(usage.max()))}, [0] * len(ix.pools.owned))
        value = _plan_value(cat, req, ix, found)
        return None if value is None else (value, found)

    # (1) each option, cheapest bound first, while its bound is below the best plan known: the smallest size found by
    # galloping and bisection, then one node at a time
    packs_at: list[dict[str, Any]] = []

    def best_known() -> float:
        values = [o["value"] for o in packs_at] + ([before] if before is not None else [])
        return min(values, default=math.inf)

    for option in options[:PACK_OPTIONS]:
        bound, p, f, cands, lb, energy = (
            option.bound,
            option.server,
            option.fabric,
            option.cands,
            option.size_bound,
            option.energy,
        )
        if not in_time():
            break
        known = best_known()
        if bound >= known - 1e-9 * max(1.0, abs(known)):  # no packing of this option is cheaper than a plan in hand
            continue
        area = {j: int(np.min(nodes[ks] * d[ks])) for j, ks in cands.items()}
        order = sorted(cands, key=lambda j: (-area[j] / len(window[j]), j))

        def packs(
            cap: int, cands: dict[str, np.ndarray] = cands, order: list[str] = order
        ) -> dict[str, tuple[int, list[int]]] | None:
            return _pack_cluster(cands, nodes, d, window, req.slots, cap, order, PACK_ITERS, rng, deadline)

        first = smallest_packing(packs, lb, req.max_nodes, in_time)
        if first is None:
            continue
        cap, packed = first
        got = finish(p, f, cands, order, cap, packed)
        if got is not None:
            packs_at.append(
                {
                    "value": got[0],
                    "plan": got[1],
                    "p": p,
                    "f": f,
                    "cands": cands,
                    "order": order,
                    "cap": cap,
                    "lb": lb,
                    "energy": energy,
                    "fails": 0,
                }
            )

    # (2) the time left: the packed option whose plan one node smaller would be cheapest (its value less what that
    # node costs) is searched again at that size (a new repair search from scratch), while that size's bound --
    # the cluster's cost at that size plus every job's least energy -- is below the best plan known; an option
    # whose search failed PACK_RETRIES times at a size is left
    def hopeful(o: dict[str, Any]) -> bool:
        smaller, known = cluster_usd(o["p"], o["f"], o["cap"] - 1) + o["energy"], best_known()
        return o["cap"] > o["lb"] and o["fails"] < PACK_RETRIES and smaller < known - 1e-9 * max(1.0, abs(known))

    while in_time():
        todo = [o for o in packs_at if hopeful(o)]
        if not todo:
            break
        o = min(
            todo,
            key=lambda o: (
                o["fails"],
                o["value"] - cluster_usd(o["p"], o["f"], o["cap"]) + cluster_usd(o["p"], o["f"], o["cap"] - 1),
            ),
        )
        smaller = _pack_cluster(
            o["cands"], nodes, d, window, req.slots, o["cap"] - 1, o["order"], PACK_REFINE_ITERS, rng, deadline
        )
        left_s = deadline - time.perf_counter()
        best_now = o["value"] <= best_known() + 1e-9 * max(1.0, abs(o["value"]))
        if smaller is None and best_now and o.get("asked") != o["cap"] - 1 and left_s >= PROOF_MIN_S:
            # the repair search failed one node below the best plan's cluster: HiGHS is asked, once per size, whether
            # any packing exists there (cluster_fits). Only for the best option and after a failed search: at 50
            # jobs, asking for every option before each search took pack's share (3 s per undecided question) and
            # the plan was 32 nodes of type-24, not 29 of type-10
            o["asked"] = o["cap"] - 1
            fits, smaller = cluster_fits(o["cands"], nodes, d, window, o["cap"] - 1, min(PROOF_S, left_s))
            if fits is False:  # proved: no cluster of this option smaller than cap runs every job
                o["lb"] = o["cap"]
                continue
        if smaller is None:
            o["fails"] += 1
            continue
        got = finish(o["p"], o["f"], o["cands"], o["order"], o["cap"] - 1, smaller)
        o["cap"] -= 1
        o["fails"] = 0
        if got is not None and got[0] < o["value"]:
            o["value"], o["plan"] = got
    best = min(packs_at, key=lambda o: o["value"], default=None)
    if best is not None and (before is None or best["value"] < before - 1e-9 * max(1.0, abs(before))):
        set_plan_start(m, cat, req, best["plan"])
        m.start_feasible = True
        out["pack_objective"] = float(pyo.value(m.objective))
        out["pack_nodes"] = float(sum(best["plan"].bought.values()))
        # lb is a proved lower bound on the option's cluster (pack_size_bound, or raised to cap by cluster_fits), so
        # at cap == lb the size is the fewest -- also when the repair search reached the bound one node at a time
        if best["cap"] == best["lb"] and best["plan"].bought == {(best["p"], best["f"]): best["cap"]}:
            # every plan that runs all jobs on one cluster of this option has >= cap nodes, so it is worth at least
            # the cluster's value at cap (cluster_value never decreases with n) plus each job's least energy
            m.pack_proof = PackProof(
                best["p"], best["f"], best["cap"], cluster_usd(best["p"], best["f"], best["cap"]) + best["energy"]
            )
            out["pack_min_proved"] = 1.0
    out["pack_s"] = time.perf_counter() - t0
    return out


def check_fleet_ids(cat: Catalog, req: FleetRequest) -> None:
    """Every job's workload exists and its amount of work is one the workload can take (samples, tokens for a
    sequence model, epochs for one with a dataset size), and every owned server exists: bad input names the job
    (or the owned entry) it is written in, with the valid ids -- not the id or the rule alone, to be searched for."""
    for j in req.jobs:
        try:
            work_from(cat.workload(j.model), j.samples, j.tokens, j.epochs)
        except PlannerInputError as exc:
            raise PlannerInputError(f"job {j.id}: {exc}") from None
    for i, o in enumerate(req.owned):
        try:
            cat.server(o.server)
        except PlannerInputError as exc:
            raise PlannerInputError(f"owned.{i} (the owned servers' entry {i + 1}): {exc}") from None


def improve_start(m: pyo.ConcreteModel, cat: Catalog, req: FleetRequest, left: Callable[[], float]) -> dict[str, float]:
    """The start heuristics of a large fleet in turn, each from the best start so far, within ``left()`` (the
    seconds left to them and the full MIP): the LP relaxation and the MIP over its modes (``restricted_start``,
    RESTRICTED_SHARE of what is left after the LP), the local search (``flatten_start``, at most FLATTEN_SHARE),
    then of the time left after these, SQUEEZE_SHARE for ``squeeze_start`` and PACK_SHARE kept for ``pack_start``,
    which runs last and ends early once no packing can beat the plan in hand; the full MIP gets the rest. Returns
    their figures and seconds (each function's docstring)."""
    opts = req.solver
    heur = restricted_start(m, opts.model_copy(update={"time_limit_s": left()}))
    heur.update(flatten_start(m, cat, req, FLATTEN_SHARE * left()))
    rest = left()
    pack_s = PACK_SHARE * rest  # kept for pack_start, which runs last
    squeeze = opts.model_copy(update={"time_limit_s": SQUEEZE_SHARE * rest})
    heur.update(squeeze_start(m, cat, req, squeeze, getattr(m, "lp_z", None)))
    heur.update(pack_start(m, cat, req, min(pack_s, left())))  # never past the call's limit
    return heur


def fleet(request: FleetRequest | dict[str, Any], catalog: Catalog | None = None, explain: bool = True) -> FleetPlan:
    """Plan the fleet; when infeasible (and ``explain``), say which single relaxation would make it feasible.

    ``req.solver.time_limit_s`` is the whole call's, the explanation's re-solves included (``_explain``: they
    share what is left of it, and the explanation says when it was cut short)."""
    if isinstance(request, (str, Path)):
        raise PlannerInputError(
            f"fleet() takes a FleetRequest or a dict of its fields, not a path ({str(request)!r}): "
            "fleet(planner.load_fleet_request(path)) reads a YAML file"
        )
    req = validated(FleetRequest, request, "fleet request")
    cat = load_catalog() if catalog is None else check_catalog(catalog)
    cat.site(req.site)
    check_fleet_ids(cat, req)
    t0 = time.perf_counter()
    # the time limit is the whole call's: modes, build, start heuristics and HiGHS all come out of it
    deadline = t0 + req.solver.time_limit_s

    def left() -> float:
        return max(1.0, deadline - time.perf_counter() - EXTRACT_RESERVE_S)

    pools = pools_of(cat, req)
    modes = job_modes(cat, req, pools=pools)
    t_modes = time.perf_counter() - t0
    missing = [j.id for j in req.jobs if not len(modes) or not (modes["job"] == j.id).any()]
    if missing:
        due = _earliest_due(cat, req, pools, missing)
        later = ", ".join(
            f"{j} to slot {t} at the earliest" if t is not None else f"{j}: not even the horizon end will do"
            for j, t in due.items()
        )
        return _infeasible(
            req,
            f"job(s) {', '.join(missing)} cannot finish inside their windows in any allowed pool (even with "
            f"{req.max_nodes} nodes): move their due slot later ({later}), allow more nodes, faster GPUs or renting",
        )
    t1 = time.perf_counter()
    m = build_fleet_model(cat, req, modes, pools)
    m.reuse_compiled = True  # compiled once for the LP relaxation, the restricted MIP and the full MIP
    t_build = time.perf_counter() - t1
    set_greedy_start(m, cat, req)
    heur: dict[str, float] = {}
    opts = req.solver
    if len(modes) >= RESTRICTED_START_MODES:
        heur = improve_start(m, cat, req, left)
        # HiGHS's presolve of the full model (probing tens of thousands of binaries) takes 10-35 s at the bench's
        # size: with less than FULL_PRESOLVE_MIN_S left it is skipped, so that the root LP bound is reached
        opts = opts.model_copy(update={"presolve": opts.presolve and left() >= FULL_PRESOLVE_MIN_S})
    # on a large model HiGHS runs in a child process killed at the time limit: its root phase on the full MIP may
    # not answer the interrupt ((viii): 42-53 s against a 25 s limit at 50 jobs); the child's start costs ~1 s
    isolate = len(modes) >= ISOLATE_MODES
    solved = solve_model(m, opts.model_copy(update={"time_limit_s": left()}), build_time_s=t_build, isolate=isolate)
    if solved.report.status.value == "infeasible" and opts.presolve:
        # an infeasibility claim is confirmed without presolve before it is reported (HiGHS proves small
        # infeasible fleets at once; one that cannot be confirmed in the time left is reported as no solution)
        solved = solve_model(
            m,
            opts.model_copy(update={"presolve": False, "time_limit_s": left()}),
            build_time_s=t_build,
            isolate=isolate,
        )
    if solved.unanswered:
        solved = _start_as_answer(m, solved)
    rep = solved.report
    lp_bound = heur.get("lp_bound") if heur.get("lp_optimal") else None
    late = rep.status.value == "time_limit" and rep.objective is not None and lp_bound is not None
    if late and rep.objective is not None and lp_bound is not None and (rep.bound is None or rep.bound < lp_bound):
        # the LP relaxation of this same MIP (restricted_start) bounds it too: HiGHS, started late, may not have
        # finished its own root LP within the time left
        bound = min(lp_bound, rep.objective)
        gap = (rep.objective - bound) / max(abs(rep.objective), 1e-12)
        rep = rep.model_copy(update={"bound": bound, "gap": gap})
    timings = {
        "modes_s": t_modes,
        "build_s": t_build,
        **{k: v for k, v in heur.items() if k.endswith("_s")},
        "handoff_s": rep.handoff_time_s,
        "solve_s": rep.solve_time_s,
    }
    if rep.status.value == "no_solution":
        msg = (
            f"HiGHS found no fleet within the time limit ({req.solver.time_limit_s:g} s): raise --time-limit or the gap"
        )
        return _infeasible(req, msg, rep, status="no_solution")
    if not rep.status.has_solution:
        return _infeasible(req, _explain(cat, req, deadline, t_modes + t_build) if explain else "infeasible", rep)
    plan = _extract(cat, req, m, solved, rep)
    figures = {k: v for k, v in heur.items() if not k.endswith("_s")}
    return plan.model_copy(update={"timings_s": timings, "start": figures, "proofs": _proofs(m, plan)})


def _proofs(m: pyo.ConcreteModel, plan: FleetPlan) -> list[str]:
    """pack_start's proof (``PackProof``) in words, when the plan returned is its packed cluster: bought on it alone,
    nothing else bought or rented, no owned server kept."""
    proof: PackProof | None = getattr(m, "pack_proof", None)
    if proof is None or plan.objective_value is None:
        return []
    used = [p for p in plan.purchases if p["added"] or p["kind"] == "rent" or p.get("kept")]
    if [(p["server"], p["fabric"], p["added"], p["kind"]) for p in used] != [
        (proof.server, proof.fabric, proof.nodes, "buy")
    ]:
        return []
    unit = OBJECTIVE_UNITS_TEXT.get(plan.objective, "")
    within = (plan.objective_value - proof.bound) / max(abs(plan.objective_value), 1e-12)
    return [
        f"{proof.nodes} is the fewest {proof.server} nodes on {proof.fabric} that run every job in its window, so "
        f"every plan running them all on one such cluster is worth at least {objective_text(proof.bound)} {unit} "
        f"(its cluster at {proof.nodes} nodes and each job's least energy): this plan is within {within:.1%} of it"
    ]


def _start_as_answer(m: pyo.ConcreteModel, solved: Solved) -> Solved:
    """The answer when the full MIP's HiGHS process gave none within the time limit (``solve_model(...,
    isolate=True)`` killed it, or it died): the start HiGHS was given, when the heuristics know it to be a plan of
    the full MIP (``m.start_feasible``) -- the incumbent HiGHS holds from its first moment, so what it would have
    returned had it stopped at the limit with nothing better. Status time_limit, objective the start's, no bound
    of HiGHS's own (``fleet()`` then takes the LP relaxation's); ``_extract`` re-checks the plan with
    ``evaluate_fleet`` like any other. Without such a start the answer stays "no solution"."""
    if not (getattr(m, "warm_start", False) and getattr(m, "start_feasible", False)):
        return solved
    rep = solved.report.model_copy(
        update={
            "status": SolverStatus.TIME_LIMIT,
            "objective": float(pyo.value(m.objective)),
            "highs_status": f"{solved.report.highs_status}; the plan is the best start",
        }
    )
    start = current_solution(m, rep)
    return solved if start is None else start


def _earliest_due(cat: Catalog, req: FleetRequest, pools: Pools, jobs: list[str]) -> dict[str, int | None]:
    """For jobs without a mode inside their window: the earliest due slot that gives them one (release slot + the
    fewest slots any allowed mode needs - 1), None when no mode fits even by the horizon end."""
    free = [
        j.model_copy(update={"due_slot": req.slots - 1, "penalty_usd_per_slot": None}) for j in req.jobs if j.id in jobs
    ]
    modes = job_modes(cat, req.model_copy(update={"jobs": free}), pools=pools)
    out: dict[str, int | None] = {}
    for j in free:
        d = modes.loc[modes["job"] == j.id, "slots_needed"] if len(modes) else []
        out[j.id] = int(j.release_slot + min(d) - 1) if len(d) else None
    return out


def _infeasible(req: FleetRequest, msg: str, rep: SolverReport | None = None, status: str = "infeasible") -> FleetPlan:
    """A result without a fleet: infeasible (with the explanation) or no incumbent within the time limit."""
    return FleetPlan(
        status=status,
        objective=req.objective,
        objective_value=None,
        purchases=[],
        assignments=[],
        schedule=[],
        totals={},
        solver=rep,
        explanation=msg,
    )


def _explain(cat: Catalog, req: FleetRequest, deadline: float | None = None, setup_s: float = 0.0) -> str:
    """Smallest single relaxations that make the fleet feasible, computed by re-solving: the budget dropped, the
    power envelope lifted, every due slot moved to the horizon end (each tried on its own).

    The re-solves share what is left of the whole call's time limit (``deadline``, a ``time.perf_counter()``
    instant; None: each gets the request's full limit): each gets an equal share of the time then left (like every
    ``fleet()`` call it may overrun its share by the modes and the build). With less than EXPLAIN_MIN_S + ``setup_s``
    left (``setup_s``: what the modes and the build took in the call explained; a re-solve takes about as long
    before HiGHS starts), the relaxations not yet tried are skipped, and one whose re-solve ends without a plan
    inside its share is not known to fail: the explanation then says it was cut short and names what it did not
    check. It never states a relaxation that was not confirmed by a plan, and says "more than one requirement
    relaxed" only when each single relaxation was proved infeasible."""
    env = req.power_kw if req.power_kw is not None else cat.site(req.site).power_envelope_kw
    tries: list[tuple[str, FleetRequest]] = []
    if req.budget_usd is not None:
        tries.append(("budget", req.model_copy(update={"budget_usd": None, "objective": "cost"})))
    tries.append(("power", req.model_copy(update={"power_kw": 1e12})))
    late = req.model_copy(update={"jobs": [j.model_copy(update={"due_slot": req.slots - 1}) for j in req.jobs]})
    if late != req:
        tries.append(("due slots", late))
    tips: list[str] = []
    unchecked: list[str] = []
    for i, (name, relaxed) in enumerate(tries):
        if deadline is None:
            limit = req.solver.time_limit_s
        else:
            left_s = deadline - time.perf_counter() - EXTRACT_RESERVE_S
            if left_s < EXPLAIN_MIN_S + setup_s:
                unchecked.extend(n for n, _r in tries[i:])
                break
            limit = left_s / (len(tries) - i)
        relaxed = relaxed.model_copy(update={"solver": req.solver.model_copy(update={"time_limit_s": limit})})
        r = fleet(relaxed, cat, explain=False)
        if r.objective_value is None:
            # no plan within its share (time limit, solver error) is not a proof that this relaxation fails
            if r.solver is not None and r.solver.status.value != "infeasible":
                unchecked.append(name)
            continue
        if name == "budget":
            need = r.totals.get("capex_usd", 0.0) + r.totals.get("rent_usd", 0.0)
            tips.append(f"a budget of at least ${need:,.0f} (you gave ${req.budget_usd:,.0f})")
        elif name == "power":
            peak = r.totals.get("peak_site_power_kw", 0.0)
            tips.append(f"{peak - env:,.0f} kW more power (peak {peak:,.0f} kW against {env:,.0f} kW)")
        else:
            tips.append(f"due slots moved to the horizon end (slot {req.slots - 1})")
    head = "No fleet meets every job's due slot, the budget and the power envelope."
    short = (
        f" The time limit ({req.solver.time_limit_s:g} s, the whole call's) cut the explanation short: "
        f"relaxing the {', the '.join(unchecked)} was not checked; raise --time-limit to check it."
        if unchecked
        else ""
    )
    if tips:
        return f"{head} It needs {', or '.join(tips)}.{short}"
    if unchecked:
        return head + short
    return f"{head} It needs more than one requirement relaxed."


def evaluate_fleet(
    cat: Catalog,
    req: FleetRequest,
    pools: Pools,
    chosen: dict[str, pd.Series],
    slots: dict[str, list[int]],
    bought: dict[tuple[str, str], int],
    kept: list[int],
) -> dict[str, Any] | None:
    """Price a complete fleet decision exactly (planner/physics/cost.py): modes and slots of every job, nodes bought per
    (type, fabric), owned nodes kept. Returns None when it breaks a rule: a job without a mode of its own, or run
    outside its window or for fewer slots than its mode needs; more than max_nodes bought per cluster or rented
    per offer and slot; capacity, a fabric rule, power or budget. Shared by the plan extraction, the start
    heuristics and the brute-force tests."""
    site = cat.site(req.site)
    H = req.slot_hours
    for jb in req.jobs:  # rows (1)-(2): one mode of the job's, in at least d_m slots of its window W_j
        row = chosen.get(jb.id)
        sl = set(slots.get(jb.id, []))
        if row is None or ("job" in row.index and row["job"] != jb.id):
            return None
        if not sl or not sl <= set(job_window(req, jb)) or len(sl) < int(row["slots_needed"]):
            return None
    if any(n > req.max_nodes for n in bought.values()):
        return None
    usage: dict[str, np.ndarray] = {}
    site_power = np.zeros(req.slots)
    for j, row in chosen.items():
        arr = usage.setdefault(str(row["group"]), np.zeros(req.slots))
        for t in slots[j]:
            arr[t] += int(row["nodes"])
            site_power[t] += float(row["power_coef_kw"])
    fab_of: dict[str, str] = {}
    for (p, f), n in bought.items():
        if n > 0:
            if p in fab_of:
                return None  # one fabric per bought type
            fab_of[p] = f
    for row in chosen.values():  # a job on a fabric without owned nodes needs it bought
        p, f = str(row["server"]), str(row["fabric"])
        if (
            row["kind"] == "site"
            and f != ANY_FABRIC
            and f not in pools.owned_fabrics.get(p, set())
            and fab_of.get(p) != f
        ):
            return None
    for g, arr in usage.items():
        p, tag = g.split("|")
        if tag == "rent":
            if (arr > req.max_nodes).any():  # rented nodes per offer and slot: R_pt <= max_nodes
                return None
            continue
        cap = np.zeros(req.slots)
        for f in pools.buy.get(p, []) if tag == "*" else [tag]:
            cap += bought.get((p, f), 0)
        for i, e in enumerate(pools.owned):
            if e.server == p and e.fabric == tag:
                cap += np.asarray(e.avail) * kept[i]
        if (arr > cap + 1e-9).any():
            return None
    idle_w = np.zeros(req.slots)
    for (p, _f), n in bought.items():
        idle_w += pools.idle_kw[p] * n
    for i, e in enumerate(pools.owned):
        idle_w += pools.idle_kw[e.server] * np.asarray(e.avail) * kept[i]
    envelope = req.power_kw if req.power_kw is not None else site.power_envelope_kw
    if (site_power + idle_w > envelope * (1 + 1e-9) + 1e-9).any():
        return None
    capex = 0.0
    for (p, f), n in bought.items():
        capex += owned_capex_usd(cat, p, f, pools.owned_on(p, f), n)[0]
    rent = 0.0
    for g, arr in usage.items():
        if g.endswith("|rent"):
            rent += group_rent_usd(cat, req, g, arr, chosen)[0]
    if req.budget_usd is not None and capex + rent > req.budget_usd * (1 + 1e-9) + 1e-6:
        return None
    site_kwh = float(idle_w.sum() * H) + sum(
        float(r["energy_coef_kwh"]) for r in chosen.values() if r["kind"] == "site"
    )
    rent_kwh = sum(float(r["energy_coef_kwh"]) for r in chosen.values() if r["kind"] == "rent")
    energy = site_kwh + rent_kwh
    penalty = 0.0
    for jb in req.jobs:
        late = max(0, max(slots[jb.id]) - jb.due_slot)
        penalty += (jb.penalty_usd_per_slot or 0.0) * late
    share = req.slots * H / (req.life_years * cost_mod.HOURS_PER_YEAR)
    cost = capex * share + site_kwh * site.electricity_usd_per_kwh + rent
    value = {"cost": cost, "energy": energy, "carbon": energy * site.carbon_kg_per_kwh}[req.objective] + penalty
    return {
        "value": value,
        "capex_usd": capex,
        "rent_usd": rent,
        "cost_usd": cost + penalty,
        "penalty_usd": penalty,
        "site_energy_kwh": site_kwh,
        "facility_energy_kwh": energy,
        "carbon_kg": energy * site.carbon_kg_per_kwh,
        "peak_site_power_kw": float((site_power + idle_w).max()),
        "usage": usage,
        "idle_kw": idle_w,
    }


def _extract(cat: Catalog, req: FleetRequest, m: pyo.ConcreteModel, solved: Any, rep: SolverReport) -> FleetPlan:
    ix: Index = m.ix
    modes = ix.modes
    z = solved.values["z"]
    r = solved.keyed.get("r", {})
    chosen = {j: modes.loc[next(k for k in ix.by_job[j] if z[k] > 0.5)] for j in ix.by_job}
    slots = {j: [t for t in ix.window[j] if r.get((j, t), 0.0) > 0.5] for j in ix.by_job}
    nvals = solved.keyed.get("N", {})
    bought = {(p, f): round(nvals.get((p, f), 0.0)) for p, f in m.BUY}
    kvals = solved.values.get("K", np.zeros(len(ix.pools.owned)))
    # owned nodes in service in no slot (past their life at the start) cost nothing either way: reported retired
    kept = [round(float(kvals[i])) if any(e.avail) else 0 for i, e in enumerate(ix.pools.owned)]
    ev = evaluate_fleet(cat, req, ix.pools, chosen, slots, bought, kept)
    if ev is None:  # cannot happen for a solution of the MIP; never report a plan that breaks a rule
        raise RuntimeError("the fleet MIP returned a plan that breaks its own rules; please report this")
    assignments: list[dict[str, Any]] = []
    for j in ix.by_job:
        row = chosen[j]
        job = next(x for x in req.jobs if x.id == j)
        fab = str(row["fabric"])
        if fab == ANY_FABRIC:  # a one-node mode: on the fabric its type was bought on
            fab = next(f for (q, f), n in bought.items() if q == row["server"] and n > 0)
        pool = f"{row['server']}|{fab}" + (" (rent)" if row["kind"] == "rent" else "")
        assignments.append(
            {
                "job": j,
                "model": job.model,
                "server": str(row["server"]),
                "gpu": str(row["gpu"]),
                "pool": pool,
                "kind": "rent" if row["kind"] == "rent" else "site",
                "nodes": int(row["nodes"]),
                "fabric": fab,
                "power_cap": float(row["power_cap"]),
                "layout": str(row["layout"]),
                "precision": str(row["precision"]),  # what it computes in: a GPU without fp4 runs fp4 in fp8
                "precision_asked": job.precision or cat.workload(job.model).precision,
                "workload_family": cat.workload(job.model).family,  # cnn, encoder, llm, recsys
                "time_to_train_h": float(row["time_to_train_h"]),
                "slots": slots[j],
                "first_slot": min(slots[j]),
                "last_slot": max(slots[j]),
                "late_slots": max(0, max(slots[j]) - job.due_slot),
                "facility_energy_kwh": float(row["facility_energy_kwh"]),
                "facility_power_kw": float(row["facility_power_kw"]),
            }
        )
    purchases = []
    types = sorted({e.server for e in ix.pools.owned} | {p for (p, f), n in bought.items() if n > 0})
    for p in types:
        s = cat.server(p)
        fabs = sorted(
            {e.fabric for e in ix.pools.owned if e.server == p}
            | {f for (q, f), n in bought.items() if q == p and n > 0}
        )
        for f in fabs:
            own = [(i, e) for i, e in enumerate(ix.pools.owned) if e.server == p and e.fabric == f]
            n_add = bought.get((p, f), 0)
            capex, sw = owned_capex_usd(cat, p, f, ix.pools.owned_on(p, f), n_add)
            g = ix.pools.site_group(p, f)
            busy = ev["usage"].get(g, np.zeros(req.slots))
            purchases.append(
                {
                    "server": p,
                    "gpu": s.gpu,
                    "fabric": f,
                    "kind": "owned+buy" if own and n_add else "owned" if own else "buy",
                    "nodes": sum(kept[i] for i, _ in own) + n_add,
                    "owned": sum(e.count for _, e in own),
                    "kept": sum(kept[i] for i, _ in own),
                    "retired": sum(e.count - kept[i] for i, e in own),
                    "added": n_add,
                    "peak_busy_nodes": int(busy.max()),
                    "switches_added": sw,
                    "capex_usd": capex,
                    "rent_usd": 0.0,
                    "node_periods": 0,
                }
            )
    for g, arr in ev["usage"].items():
        p, tag = g.split("|")
        if tag != "rent":
            continue
        s = cat.server(p)
        usd, periods = group_rent_usd(cat, req, g, arr, chosen)
        purchases.append(
            {
                "server": p,
                "gpu": s.gpu,
                "fabric": ix.pools.rent[p],
                "kind": "rent",
                "nodes": int(arr.max()),
                "owned": 0,
                "kept": 0,
                "retired": 0,
                "added": int(arr.max()),
                "peak_busy_nodes": int(arr.max()),
                "switches_added": 0,
                "capex_usd": 0.0,
                "rent_usd": usd,
                "node_periods": periods,
            }
        )
    schedule = []
    pools_used = sorted(
        {a["pool"] for a in assignments} | {f"{q['server']}|{q['fabric']}" for q in purchases if q["kind"] != "rent"}
    )
    for t in range(req.slots):
        for pool in pools_used:
            running = [a for a in assignments if a["pool"] == pool and t in a["slots"]]
            p = pool.split("|")[0]
            idle_nodes = 0.0
            if not pool.endswith("(rent)"):
                f = pool.split("|")[1]
                cap = bought.get((p, f), 0) + sum(
                    e.avail[t] * kept[i] for i, e in enumerate(ix.pools.owned) if e.server == p and e.fabric == f
                )
                idle_nodes = cap - sum(a["nodes"] for a in running)
            schedule.append(
                {
                    "slot": t,
                    "server": p,
                    "pool": pool,
                    "nodes": sum(a["nodes"] for a in running),
                    "jobs": ",".join(a["job"] for a in running),
                    "facility_power_kw": sum(a["facility_power_kw"] for a in running)
                    + ix.pools.idle_kw.get(p, 0.0) * idle_nodes,
                    "on_site": not pool.endswith("(rent)"),
                }
            )
    totals = {
        k: float(ev[k])
        for k in (
            "capex_usd",
            "rent_usd",
            "cost_usd",
            "penalty_usd",
            "site_energy_kwh",
            "facility_energy_kwh",
            "carbon_kg",
            "peak_site_power_kw",
        )
    }
    totals["peak_power_kw"] = totals["peak_site_power_kw"]
    status = "optimal" if rep.status.value == "optimal" else "time_limit"
    return FleetPlan(
        status=status,
        objective=req.objective,
        objective_value=float(ev["value"]),
        purchases=purchases,
        assignments=assignments,
        schedule=schedule,
        totals=totals,
        solver=rep,
    )
