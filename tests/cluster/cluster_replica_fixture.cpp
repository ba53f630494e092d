#include "tests/cluster/cluster_replica_fixture.hpp"

#include <iostream>
#include <thread>

#include "actors/router/router_directory.hpp"
#include "client/connection.hpp"

namespace tb::test {

namespace {

namespace pb = tinybroker::v1;
using namespace std::chrono_literals;

// Returns the HRW winner of group `name` among `live`.
std::string replica_hrw_winner(const std::vector<std::string>& live,
                               const std::string& name) {
  auto best = live.front();
  for (auto& node : live)
    if (hrw_beats(node, best, name))
      best = node;
  return best;
}

// Returns a stub for node `n`'s admin calls.
std::unique_ptr<pb::Broker::Stub> replica_stub(const cluster_node& n) {
  return pb::Broker::NewStub(client::make_channel(n.process->address()));
}

} // namespace

std::string ReplicaFixture::replicas_missing() {
  if (pb::GroupSettings::descriptor()->FindFieldByName("replicas") == nullptr)
    return "GroupSettings has no `replicas` field in this build (the "
           "failover branch of issue 32 adds it)";
  return {};
}

cluster_node& ReplicaFixture::node_named(const std::string& name) {
  for (auto& n : nodes)
    if (n->name == name)
      return *n;
  ADD_FAILURE() << "no node " << name;
  return *nodes.front();
}

grpc::Status ReplicaFixture::create_group(const std::string& name,
                                          const std::string& pattern,
                                          uint32_t replicas,
                                          uint32_t ack_wait_ms) {
  pb::CreateGroupRequest req;
  req.set_name(name);
  auto* settings = req.mutable_settings();
  settings->set_pattern(pattern);
  settings->set_ack_wait_ms(ack_wait_ms);
  if (auto* f = settings->GetDescriptor()->FindFieldByName("replicas"))
    settings->GetReflection()->SetUInt32(settings, f, replicas);
  for (auto& n : nodes)
    if (n->process) {
      pb::GroupInfo info;
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + replica_patience);
      return replica_stub(*n)->CreateGroup(&ctx, req, &info);
    }
  return grpc::Status{grpc::StatusCode::UNAVAILABLE, "no node runs"};
}

std::string ReplicaFixture::placed_group(const std::string& owner,
                                         const std::string& replica,
                                         const std::string& pattern,
                                         uint32_t ack_wait_ms,
                                         uint32_t replicas) {
  std::vector<std::string> all, rest;
  for (auto& n : nodes) {
    all.push_back(n->name);
    if (n->name != owner)
      rest.push_back(n->name);
  }
  for (int i = 0; i < 1000; ++i) {
    auto name = pattern.substr(0, pattern.find('.')) + std::to_string(i);
    if (replica_hrw_winner(all, name) != owner ||
        replica_hrw_winner(rest, name) != replica)
      continue;
    auto status = create_group(name, pattern, replicas, ack_wait_ms);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return status.ok() ? name : std::string{};
  }
  ADD_FAILURE() << "no group name owned by " << owner << " with replica "
                << replica;
  return {};
}

pb::GroupInfo ReplicaFixture::group_info(const cluster_node& n,
                                         const std::string& name) {
  if (!n.process)
    return {};
  pb::ListGroupsReply reply;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 2s);
  if (!replica_stub(n)->ListGroups(&ctx, pb::ListGroupsRequest{}, &reply).ok())
    return {};
  for (auto& g : reply.groups())
    if (g.name() == name)
      return g;
  return {};
}

std::string ReplicaFixture::field_text(const google::protobuf::Message& msg,
                                       const std::string& field) {
  using fd = google::protobuf::FieldDescriptor;
  auto* f = msg.GetDescriptor()->FindFieldByName(field);
  if (f == nullptr || f->is_repeated())
    return {};
  auto* r = msg.GetReflection();
  switch (f->cpp_type()) {
  case fd::CPPTYPE_STRING:
    return r->GetString(msg, f);
  case fd::CPPTYPE_BOOL:
    return r->GetBool(msg, f) ? "true" : "false";
  case fd::CPPTYPE_UINT64:
    return std::to_string(r->GetUInt64(msg, f));
  case fd::CPPTYPE_UINT32:
    return std::to_string(r->GetUInt32(msg, f));
  case fd::CPPTYPE_INT64:
    return std::to_string(r->GetInt64(msg, f));
  case fd::CPPTYPE_INT32:
    return std::to_string(r->GetInt32(msg, f));
  default:
    return {};
  }
}

uint64_t ReplicaFixture::field_number(const google::protobuf::Message& msg,
                                      const std::string& field) {
  auto text = field_text(msg, field);
  if (text.empty() || text == "false")
    return 0;
  if (text == "true")
    return 1;
  return std::strtoull(text.c_str(), nullptr, 10);
}

bool ReplicaFixture::eventually(const std::function<bool()>& check,
                                std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  do {
    if (check())
      return true;
    std::this_thread::sleep_for(20ms);
  } while (std::chrono::steady_clock::now() < deadline);
  return false;
}

bool ReplicaFixture::replica_in_sync(const pb::GroupInfo& info) {
  // Without GroupInfo.replica_synced (a build with the router side of
  // replicas only), a named replica is all there is to see.
  bool has_synced =
      info.GetDescriptor()->FindFieldByName("replica_synced") != nullptr;
  return !field_text(info, "replica_node").empty() &&
         (!has_synced || field_text(info, "replica_synced") == "true");
}

bool ReplicaFixture::wait_replica_synced(const std::string& name,
                                         std::chrono::milliseconds timeout) {
  return eventually(
      [&] {
        for (auto& n : nodes) {
          auto info = group_info(*n, name);
          if (info.owner_node() != n->name)
            continue;
          return replica_in_sync(info);
        }
        return false;
      },
      timeout);
}

std::string ReplicaFixture::owners_listed(const std::string& name) {
  std::string s;
  for (auto& n : nodes)
    if (n->process)
      s += (s.empty() ? "" : " ") + n->name + ":" +
           group_info(*n, name).owner_node();
  return s;
}

std::set<std::string> ReplicaFixture::owner_set(const std::string& name) {
  std::set<std::string> owners;
  for (auto& n : nodes)
    if (n->process) {
      auto owner = group_info(*n, name).owner_node();
      if (!owner.empty())
        owners.insert(owner);
    }
  return owners;
}

bool ReplicaFixture::wait_owner(const std::string& name,
                                const std::string& owner,
                                std::chrono::milliseconds timeout) {
  return eventually(
      [&] {
        for (auto& n : nodes)
          if (n->process && group_info(*n, name).owner_node() != owner)
            return false;
        return true;
      },
      timeout);
}

uint64_t ReplicaFixture::pile_up(cluster_workload& work, const std::string& g,
                                 const std::string& owner) {
  work.hold(true);
  std::this_thread::sleep_for(300ms);
  auto c = group_info(node_named(owner), g).counters();
  return c.pending() + c.in_flight();
}

void ReplicaFixture::kill_node(cluster_node& n, cluster_workload* work) {
  if (work != nullptr)
    work->set_address(n.name, "");
  if (n.process) {
    ::kill(n.process->pid(), SIGCONT);
    n.process->stop(SIGKILL, 10s);
    n.process.reset();
  }
}

void ReplicaFixture::fill_book(cluster_workload& work) {
  for (auto& n : nodes)
    work.set_address(n->name, n->process ? n->process->address() : "");
}

std::vector<uint16_t> ReplicaFixture::other_ports(const cluster_node& n) {
  std::vector<uint16_t> ports;
  for (auto& other : nodes)
    if (other.get() != &n)
      ports.push_back(other->port);
  return ports;
}

void ReplicaFixture::dump(const std::string& group) {
  for (auto& n : nodes) {
    if (!n->process) {
      std::cout << "==== " << n->name << ": not running" << std::endl;
      continue;
    }
    std::cout << "==== " << n->name << "\n"
              << stats(*n).ShortDebugString() << "\n"
              << group_info(*n, group).ShortDebugString() << std::endl;
    if (getenv("TB_TEST_DUMP_LOGS") != nullptr)
      std::cout << n->process->output() << std::endl;
  }
}

} // namespace tb::test
