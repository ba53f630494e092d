// Telling systemd how the broker is doing (sd_notify(3)), for the
// `Type=notify` unit (config/tinybroker.service.in). Without NOTIFY_SOCKET
// in the environment, as when started by hand, every call does nothing.

#pragma once

#include <string_view>

namespace tb {

/// Says READY=1 with `status` as the unit's status line: the port is bound
/// and the broker serves.
void notify_ready(std::string_view status);

/// Says STOPPING=1: the broker drains and ends.
void notify_stopping();

/// Says RELOADING=1 while `reload` runs, then READY=1 again.
template <class Reload>
void notify_reloading(Reload reload);

/// Sends `state` (newline-separated `KEY=VALUE` lines) to systemd; false
/// if systemd does not listen or the message did not go out.
bool notify_systemd(std::string_view state);

template <class Reload>
void notify_reloading(Reload reload) {
  notify_systemd("RELOADING=1");
  reload();
  notify_systemd("READY=1");
}

} // namespace tb
