#include "actors/cluster/cluster_book.hpp"

#include <algorithm>
#include <tuple>

namespace tb {

const char* to_string(peer_state x) noexcept {
  switch (x) {
  case peer_state::connecting:
    return "connecting";
  case peer_state::syncing:
    return "syncing";
  case peer_state::synced:
    return "synced";
  case peer_state::down:
    return "down";
  default:
    return "refused";
  }
}

namespace {

// Returns true if a peer in `x` is connected (greeted and not gone).
bool cluster_book_is_live(peer_state x) {
  return x == peer_state::syncing || x == peer_state::synced;
}

} // namespace

cluster_book::cluster_book(std::string name, std::string node_id,
                           std::string version,
                           const std::vector<std::string>& configured,
                           uint64_t now_ms)
    : name_(std::move(name)), node_id_(std::move(node_id)),
      version_(std::move(version)) {
  for (auto& address : configured) {
    auto& s = slots_[address];
    s.address = address;
    s.configured = true;
    s.since_unix_ms = now_ms;
  }
}

hello_verdict cluster_book::judge(const cluster_hello& hello) const {
  auto refuse = [](std::string reason) {
    return hello_verdict{hello_verdict::refuse, std::move(reason)};
  };
  if (hello.version != version_)
    return refuse("node \"" + hello.name + "\" speaks cluster protocol \"" +
                  hello.version + "\", this node \"" + version_ + "\"");
  if (hello.name == name_)
    return refuse("duplicate node name \"" + name_ + "\": the node at " +
                  hello.address + " (node id " + hello.node_id +
                  ") has the name of this node (node id " + node_id_ + ")");
  if (hello.node_id == node_id_)
    return refuse("node \"" + hello.name + "\" has the CAF node id " +
                  node_id_ +
                  " of this node (containers sharing host data and PID?)");
  for (auto& [name, p] : peers_)
    if (name != hello.name && p.node_id == hello.node_id &&
        cluster_book_is_live(p.state))
      return refuse("node \"" + hello.name +
                    "\" has the node id of live node \"" + name + "\" (" +
                    p.node_id + ")");
  auto i = peers_.find(hello.name);
  if (i == peers_.end())
    return {hello_verdict::fresh, {}};
  auto& p = i->second;
  if (p.node_id == hello.node_id && p.epoch == hello.epoch)
    return {cluster_book_is_live(p.state) ? hello_verdict::same
                                          : hello_verdict::rejoin,
            {}};
  if (cluster_book_is_live(p.state))
    return refuse("duplicate node name \"" + hello.name + "\": node id " +
                  p.node_id + " at " + p.address +
                  " is connected under this name; node id " + hello.node_id +
                  " at " + hello.address + " is refused");
  return {hello_verdict::rejoin, {}};
}

cluster_peer& cluster_book::record_up(const cluster_hello& hello,
                                      uint64_t now_ms) {
  auto [i, added] = peers_.try_emplace(hello.name);
  auto& p = i->second;
  if (!added && p.state == peer_state::down)
    ++p.reconnects;
  p.name = hello.name;
  p.address = hello.address;
  p.node_id = hello.node_id;
  p.epoch = hello.epoch;
  p.state = peer_state::syncing;
  p.since_unix_ms = now_ms;
  p.last_error.clear();
  if (!hello.address.empty()) {
    auto& s = slot(hello.address);
    s.name = hello.name;
    s.resolved = true;
  }
  return p;
}

void cluster_book::record_synced(const std::string& name, uint64_t epoch,
                                 uint64_t now_ms, const std::string& error) {
  auto i = peers_.find(name);
  if (i == peers_.end() || i->second.epoch != epoch ||
      i->second.state != peer_state::syncing)
    return;
  i->second.state = peer_state::synced;
  i->second.since_unix_ms = now_ms;
  i->second.last_error = error;
}

std::vector<std::string> cluster_book::record_down(const std::string& name,
                                                   uint64_t now_ms) {
  std::vector<std::string> redial;
  auto i = peers_.find(name);
  if (i == peers_.end())
    return redial;
  i->second.state = peer_state::down;
  i->second.since_unix_ms = now_ms;
  if (name_ > name)
    return redial; // the smaller name redials: the peer dials this node
  for (auto& [address, s] : slots_)
    if (s.name == name) {
      s.since_unix_ms = now_ms;
      redial.push_back(address);
    }
  return redial;
}

cluster_slot& cluster_book::slot(const std::string& address) {
  auto& s = slots_[address];
  if (s.address.empty())
    s.address = address;
  return s;
}

bool cluster_book::should_dial(const std::string& address) const {
  auto i = slots_.find(address);
  if (i == slots_.end() || i->second.dialing)
    return false;
  auto& s = i->second;
  if (s.name.empty())
    return true; // nobody met there yet: dial
  auto p = peers_.find(s.name);
  if (p == peers_.end())
    return true;
  if (cluster_book_is_live(p->second.state))
    return false;
  // A node met before: the smaller name redials; a refused one is retried
  // by the side that dialed it.
  return p->second.state == peer_state::refused || name_ < s.name;
}

std::chrono::milliseconds
cluster_book::record_dial_failed(const std::string& address,
                                 const std::string& error, uint64_t now_ms,
                                 bool refused) {
  auto& s = slot(address);
  s.refused = refused;
  auto delay = s.next_delay;
  s.next_delay = std::min(s.next_delay * 2, cluster_max_backoff);
  ++s.failed_dials;
  s.resolved = true;
  if (s.last_error.empty() || s.last_error != error)
    s.since_unix_ms = now_ms;
  s.last_error = error;
  return delay;
}

void cluster_book::record_met(const std::string& address,
                              const std::string& name, uint64_t now_ms) {
  auto& s = slot(address);
  s.name = name;
  s.next_delay = cluster_first_backoff;
  s.failed_dials = 0;
  s.resolved = true;
  s.refused = false;
  s.last_error.clear();
  s.since_unix_ms = now_ms;
}

bool cluster_book::ready() const {
  for (auto& [name, p] : peers_)
    if (p.state == peer_state::syncing && p.reconnects == 0)
      return false;
  if (deadline_passed_)
    return true;
  return std::all_of(slots_.begin(), slots_.end(), [](const auto& kv) {
    return !kv.second.configured || kv.second.resolved;
  });
}

const cluster_peer* cluster_book::find(const std::string& name) const {
  auto i = peers_.find(name);
  return i == peers_.end() ? nullptr : &i->second;
}

std::vector<cluster_peer_view> cluster_book::view() const {
  std::vector<cluster_peer_view> result;
  for (auto& [name, p] : peers_) {
    cluster_peer_view v;
    v.name = name;
    v.address = p.address;
    v.state = to_string(p.state);
    v.since_unix_ms = p.since_unix_ms;
    v.epoch = p.epoch;
    v.reconnects = p.reconnects;
    v.node_id = p.node_id;
    v.last_error = p.last_error;
    for (auto& [address, s] : slots_)
      if (s.name == name)
        v.failed_dials += s.failed_dials;
    result.push_back(std::move(v));
  }
  // The addresses where no node answered yet (or one was refused).
  for (auto& [address, s] : slots_) {
    if (!s.name.empty() && peers_.count(s.name) != 0)
      continue;
    cluster_peer_view v;
    v.address = address;
    v.state =
        to_string(s.refused ? peer_state::refused : peer_state::connecting);
    v.since_unix_ms = s.since_unix_ms;
    v.last_error = s.last_error;
    v.failed_dials = s.failed_dials;
    result.push_back(std::move(v));
  }
  std::sort(result.begin(), result.end(),
            [](const cluster_peer_view& x, const cluster_peer_view& y) {
              return std::tie(x.name, x.address) < std::tie(y.name, y.address);
            });
  return result;
}

} // namespace tb
