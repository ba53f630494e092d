# The cluster's tests (issue 30, issue 32, docs/cluster.md), included by
# tests/CMakeLists.txt (paths are relative to tests/): first its rules and
# actors in one process, then clusters of broker processes on loopback.

# The cluster's rules and its actor without sockets (issue 30,
# docs/cluster.md): the book, the cluster actor on the test coordinator with
# a stand-in middleman, and the [cluster] table.
tb_add_test(cluster_unit_tests
  SOURCES actors/cluster_book_test.cpp actors/cluster_actor_test.cpp
          config/cluster_config_test.cpp
  LIBS tb_actors NO_UNITY)
# The majority rule on a session's paths (issue 32 point 3): group
# publishes, joins, acks and requests refused without quorum.
tb_add_test(quorum_tests
  SOURCES actors/session_quorum_test.cpp
  LIBS tb_actors)
# Fan-out across nodes (issue 30 point 2): several routers in one system.
tb_add_test(cluster_fanout_tests
  SOURCES actors/cluster_fanout_test.cpp actors/cluster_fanout_link_test.cpp
  LIBS tb_actors)
# Groups across nodes (issue 30 points 3-4): one owner per group, the
# directory on every router.
tb_add_test(cluster_groups_tests
  SOURCES actors/cluster_groups_test.cpp actors/cluster_groups_loss_test.cpp
  LIBS tb_actors)
# Replicas, the router's side (issue 32): placement, promotion when the
# owner's node dies, ownership terms.
tb_add_test(cluster_replica_router_tests
  SOURCES actors/cluster_replica_router_test.cpp
          actors/cluster_takeover_test.cpp
  LIBS tb_actors)

# A group's replica (issue 32 points 1-2, group side): the stream to the
# replica actor, publishes confirmed after its rack, promote, and a group
# started from a promoted replica's state.
tb_add_test(replica_tests
  SOURCES actors/group_replica_test.cpp actors/group_seed_test.cpp
  LIBS tb_actors)
# A session whose group's node is lost (issue 30 points 3-4): pending
# publishes and requests answered at the down, memberships re-joining.
tb_add_test(group_member_tests
  SOURCES actors/group_node_loss_test.cpp
          actors/group_node_loss_rejoin_test.cpp
  LIBS tb_actors)

# A cluster of broker processes on loopback (issue 30 points 1 and 6,
# docs/cluster.md): forming, SIGKILL, SIGSTOP/SIGCONT, restart, duplicate
# names, other versions, TLS between nodes. A few seconds each.
tb_add_test(cluster_tests
  SOURCES cluster/cluster_fixture.cpp cluster/cluster_test.cpp
          cluster/cluster_tls_test.cpp cluster/cluster_cli_test.cpp
          cluster/cluster_fanout_e2e_test.cpp
          cluster/cluster_traffic_test.cpp
          cluster/cluster_groups_test.cpp cluster/cluster_groups_kill_test.cpp
  LIBS tinybroker_client tb_test_support tb_actors CAF::openssl
       PkgConfig::HTTPLIB
  TIMEOUT 120
  NO_UNITY)
target_compile_definitions(cluster_tests PRIVATE
  TINYBROKER_CLI="$<TARGET_FILE:tinybroker-cli>")
add_dependencies(cluster_tests tinybroker tinybroker-cli)

# The majority rule with 3 processes (issue 32 point 3): a node that sees 1
# of 3 refuses group publishes and serves fan-out; quorum back when the
# others resume. About 5 s.
tb_add_test(cluster_quorum_tests
  SOURCES cluster/cluster_fixture.cpp cluster/cluster_quorum_test.cpp
  LIBS tinybroker_client tb_test_support tb_actors CAF::openssl
       PkgConfig::HTTPLIB
  TIMEOUT 120
  NO_UNITY)
add_dependencies(cluster_quorum_tests tinybroker)

# The cluster's figures as short tests (issue 30 point 7, docs/cluster.md
# "Figures"): a flood declares no live peer dead, a stopped peer costs the
# publisher at most its link buffer, messages held for a peer that went
# down are counted lost, messages cross a TLS link in order, the bench
# spreads its subscribers over nodes. About 25 s.
tb_add_test(cluster_figure_tests
  SOURCES cluster/cluster_fixture.cpp cluster/cluster_figures_test.cpp
          cluster/cluster_tls_fanout_test.cpp cluster/cluster_bench_test.cpp
  LIBS tinybroker_client tb_test_support tb_actors PkgConfig::HTTPLIB
  TIMEOUT 120
  NO_UNITY)
target_compile_definitions(cluster_figure_tests PRIVATE
  TINYBROKER_CLI="$<TARGET_FILE:tinybroker-cli>"
  TINYBROKER_BENCH="$<TARGET_FILE:tinybroker-bench>")
add_dependencies(cluster_figure_tests tinybroker tinybroker-cli
  tinybroker-bench)

# Groups with a replica as 3 processes on loopback (issue 32 point 5,
# docs/cluster.md "Replicas"): the owner killed mid-stream, the replica
# killed, both in turn, the owner stopped and resumed, a partition made with
# nftables (tests/cluster/cluster_partition.hpp; as root, skipped
# otherwise) and a rolling restart, each with publishers and workers
# running: 0 confirmed messages lost, duplicates counted; and the figures
# of confirm latency and replica memory (scripts/replica_figures.py runs
# them). 10-40 s each.
tb_add_test(cluster_replica_tests
  SOURCES cluster/cluster_fixture.cpp cluster/cluster_replica_fixture.cpp
          cluster/cluster_workload.cpp cluster/cluster_partition.cpp
          cluster/cluster_replica_test.cpp
          cluster/cluster_replica_restart_test.cpp
          cluster/cluster_replica_figures_test.cpp
  LIBS tinybroker_client tb_test_support tb_actors PkgConfig::HTTPLIB
  TIMEOUT 120
  NO_UNITY)
add_dependencies(cluster_replica_tests tinybroker)

# The soak across nodes (issue 30 point 6, docs/operations.md "Soak across
# nodes"): 3 nodes, the workers' node killed and restarted every ~5 s while
# publishers and workers run; 20 s of load. Not under sanitizers (RSS check,
# time).
if(NOT tb_sanitize)
  add_test(NAME cluster_soak
    COMMAND $<TARGET_FILE:tinybroker-soak> --nodes 3 --duration 20s
            --node-kill-every 5s --rate 300)
  set_tests_properties(cluster_soak PROPERTIES TIMEOUT 180)
  # The same with the group copied to a replica (issue 32 point 5): the
  # kills hit the group's owner and the other node in turn; 0 confirmed
  # messages lost. 10 minutes by hand: --duration 10m (docs/cluster.md,
  # "Replicas: figures").
  add_test(NAME cluster_soak_replicas
    COMMAND $<TARGET_FILE:tinybroker-soak> --nodes 3 --replicas 1
            --duration 20s --node-kill-every 5s --rate 300)
  set_tests_properties(cluster_soak_replicas PROPERTIES TIMEOUT 180)
endif()
