// `tinybroker-cli groups ls|create|delete|purge`: the consumer group admin
// calls.

#include <iostream>
#include <memory>

#include "tools/cli/cli_common.hpp"
#include "tools/cli/group_view.hpp"
#include "tools/cli/json_writer.hpp"

#include "config/config_loader.hpp"

namespace tb::cli {

namespace {

namespace pb = tinybroker::v1;

// The settings `groups create` was given; unset flags take the broker's
// `[groups.defaults]`.
struct create_options {
  std::string name;
  pb::GroupSettings settings;
};

// Returns the settings of `info` on one line, in config syntax.
std::string describe_settings(const pb::GroupInfo& info) {
  auto& s = info.settings();
  auto dead_letter =
      s.dead_letter().empty() ? "$dlq." + info.name() : s.dead_letter();
  return "pattern=" + s.pattern() +
         " ack_wait=" + format_duration(s.ack_wait_ms()) + " max_deliveries=" +
         (s.unlimited_deliveries() ? std::string{"0 (unlimited)"}
                                   : std::to_string(s.max_deliveries())) +
         " max_pending_messages=" + std::to_string(s.max_pending_messages()) +
         " max_pending_bytes=" + format_size(s.max_pending_bytes()) +
         " overflow=" + overflow_name(s.overflow()) +
         " dead_letter=" + dead_letter + " policy=" + s.policy() +
         (s.dedup_window_ms() == 0
              ? std::string{}
              : " dedup_window=" + format_duration(s.dedup_window_ms())) +
         (s.replicas() == 0 ? std::string{}
                            : " replicas=" + std::to_string(s.replicas()));
}

// Returns a client context whose deadline is the timeout from now.
std::unique_ptr<grpc::ClientContext>
make_context(const connection_options& opts) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + opts.timeout);
  return ctx;
}

// Runs `groups ls`.
int run_ls(const connection_options& opts) {
  auto conn = connect(opts);
  pb::ListGroupsReply reply;
  auto ctx = make_context(opts);
  check_status(conn->stub().ListGroups(ctx.get(), {}, &reply), "ListGroups");
  if (!opts.json) {
    print_group_table(std::cout, list_of(reply.groups()));
    return exit_ok;
  }
  json_writer out;
  out.open_object().open_array("groups");
  for (auto& g : reply.groups())
    write_group(out, g, false);
  std::cout << out.close_array().close_object().str() << '\n';
  return exit_ok;
}

// Runs `groups create`.
int run_create(const create_options& create, const connection_options& opts) {
  require_utf8("group name", create.name);
  require_utf8("--pattern", create.settings.pattern());
  require_utf8("--dead-letter", create.settings.dead_letter());
  require_utf8("--policy", create.settings.policy());
  auto conn = connect(opts);
  pb::CreateGroupRequest request;
  request.set_name(create.name);
  *request.mutable_settings() = create.settings;
  pb::GroupInfo reply;
  auto ctx = make_context(opts);
  check_status(conn->stub().CreateGroup(ctx.get(), request, &reply),
               "creating group \"" + create.name + "\"");
  if (opts.json) {
    json_writer out;
    write_group(out, reply, false);
    std::cout << out.str() << '\n';
  } else {
    std::cout << "group " << reply.name() << ": " << describe_settings(reply)
              << '\n';
  }
  return exit_ok;
}

// Runs `groups delete`.
int run_delete(const std::string& name, const connection_options& opts) {
  require_utf8("group name", name);
  auto conn = connect(opts);
  pb::DeleteGroupRequest request;
  request.set_name(name);
  pb::DeleteGroupReply reply;
  auto ctx = make_context(opts);
  check_status(conn->stub().DeleteGroup(ctx.get(), request, &reply),
               "deleting group \"" + name + "\"");
  if (opts.json) {
    json_writer out;
    out.open_object()
        .text("name", name)
        .number("dropped_messages", reply.dropped_messages())
        .close_object();
    std::cout << out.str() << '\n';
  } else {
    std::cout << "deleted group " << name << " (dropped "
              << reply.dropped_messages() << " messages)\n";
  }
  return exit_ok;
}

// Runs `groups purge`.
int run_purge(const std::string& name, const connection_options& opts) {
  require_utf8("group name", name);
  auto conn = connect(opts);
  pb::PurgeGroupRequest request;
  request.set_name(name);
  pb::PurgeGroupReply reply;
  auto ctx = make_context(opts);
  check_status(conn->stub().PurgeGroup(ctx.get(), request, &reply),
               "purging group \"" + name + "\"");
  if (opts.json) {
    json_writer out;
    out.open_object()
        .text("name", name)
        .number("purged_messages", reply.purged_messages())
        .close_object();
    std::cout << out.str() << '\n';
  } else {
    std::cout << "purged group " << name << " (dropped "
              << reply.purged_messages()
              << " pending messages; those in flight stay)\n";
  }
  return exit_ok;
}

// Adds `groups create` with one flag per group setting.
command add_create(CLI::App& groups, const connection_options& opts) {
  auto create = std::make_shared<create_options>();
  auto& s = create->settings;
  auto* cmd = groups.add_subcommand(
      "create", "Create a consumer group (or confirm an identical one). "
                "Settings not given take the broker's [groups.defaults] "
                "(docs/configuration.md).");
  cmd->add_option("NAME", create->name,
                  "group name: [A-Za-z0-9_-], at most "
                  "128 bytes")
      ->required();
  cmd->add_option_function<std::string>(
         "-p,--pattern", [&s](const std::string& v) { s.set_pattern(v); },
         "topic pattern whose messages the group holds")
      ->required();
  cmd->add_option_function<std::string>(
         "--ack-wait",
         [&s](const std::string& v) {
           auto ms = parse_duration_flag("--ack-wait", v).count();
           if (ms <= 0 || ms > int64_t{UINT32_MAX})
             throw CLI::ValidationError("--ack-wait",
                                        "must be from 1ms to 8760h");
           s.set_ack_wait_ms(static_cast<uint32_t>(ms));
         },
         "redeliver what is not answered within this long (default 30s)")
      ->type_name("DURATION");
  cmd->add_option_function<std::string>(
         "--dedup-window",
         [&s](const std::string& v) {
           auto ms = parse_duration_flag("--dedup-window", v).count();
           if (ms <= 0 || ms > int64_t{8760} * 3600 * 1000)
             throw CLI::ValidationError("--dedup-window",
                                        "must be from 1ms to 8760h");
           s.set_dedup_window_ms(static_cast<uint64_t>(ms));
         },
         "remember msg_ids on the group's topics at least this long "
         "(default: the broker's [dedup] window)")
      ->type_name("DURATION");
  cmd->add_option_function<uint32_t>(
      "--max-deliveries",
      [&s](uint32_t n) {
        s.set_max_deliveries(n);
        s.set_unlimited_deliveries(n == 0);
      },
      "attempts before a message is dead-lettered; 0 = unlimited "
      "(default 5)");
  cmd->add_option_function<uint64_t>(
         "--max-pending-messages",
         [&s](uint64_t n) { s.set_max_pending_messages(n); },
         "most messages the group holds (default 1000000)")
      ->check(CLI::PositiveNumber);
  cmd->add_option_function<std::string>(
         "--max-pending-bytes",
         [&s](const std::string& v) {
           auto bytes = parse_size(v);
           if (!bytes || *bytes == 0)
             throw CLI::ValidationError(
                 "--max-pending-bytes",
                 "got \"" + v + "\"; expected bytes like 65536, 64KiB, 1GiB");
           s.set_max_pending_bytes(*bytes);
         },
         "most payload bytes the group holds (default 1GiB)")
      ->type_name("SIZE");
  cmd->add_option_function<std::string>(
         "--overflow",
         [&s](const std::string& v) {
           s.set_overflow(v == "drop_oldest" ? pb::OVERFLOW_DROP_OLDEST
                                             : pb::OVERFLOW_REJECT);
         },
         "when full: reject (refuse new messages) or drop_oldest "
         "(default reject)")
      ->check(CLI::IsMember({"reject", "drop_oldest"}));
  cmd->add_option_function<std::string>(
      "--dead-letter", [&s](const std::string& v) { s.set_dead_letter(v); },
      "dead letter topic, or none to drop (default $dlq.NAME)");
  cmd->add_option_function<uint32_t>(
      "--replicas", [&s](uint32_t n) { s.set_replicas(n); },
      "other nodes keeping a copy of the group's messages: 0 or 1 (default: "
      "the broker's [cluster] replicas; no effect on a single node)");
  cmd->add_option_function<std::string>(
      "--policy", [&s](const std::string& v) { s.set_policy(v); },
      "how a member is picked: round_robin, key_hash, ... (default "
      "round_robin)");
  set_examples(*cmd, "  tinybroker-cli groups create workers --pattern "
                     "'jobs.>' --ack-wait 10s --max-deliveries 3\n"
                     "  tinybroker-cli groups create audit --pattern "
                     "'audit.>' --overflow drop_oldest --dead-letter none\n");
  return {cmd, [create, &opts] {
            return run_create(*create, opts);
          }};
}

} // namespace

std::vector<command> add_groups_commands(CLI::App& app,
                                         const connection_options& opts) {
  auto* groups = app.add_subcommand(
      "groups", "List, create, delete and purge consumer groups.");
  groups->require_subcommand(1);
  set_examples(*groups, "  tinybroker-cli groups ls\n"
                        "  tinybroker-cli groups create workers --pattern "
                        "'jobs.>'\n"
                        "  tinybroker-cli groups delete workers\n"
                        "  tinybroker-cli groups purge workers\n");
  auto* ls = groups->add_subcommand(
      "ls", "List the groups with their pattern and counters (--json: "
            "settings too).");
  set_examples(*ls, "  tinybroker-cli groups ls\n"
                    "  tinybroker-cli groups ls --json\n");
  auto create = add_create(*groups, opts);
  auto name = std::make_shared<std::string>();
  auto* del = groups->add_subcommand(
      "delete", "Delete a group: drops the messages it holds and ends its "
                "members' subscriptions.");
  del->add_option("NAME", *name, "the group's name")->required();
  set_examples(*del, "  tinybroker-cli groups delete workers\n");
  auto purge_name = std::make_shared<std::string>();
  auto* purge = groups->add_subcommand(
      "purge", "Drop the messages a group holds and has not handed out; "
               "deliveries in flight stay and may still be answered.");
  purge->add_option("NAME", *purge_name, "the group's name")->required();
  set_examples(*purge, "  tinybroker-cli groups purge workers\n");
  return {{ls,
           [&opts] {
             return run_ls(opts);
           }},
          std::move(create),
          {del,
           [name, &opts] {
             return run_delete(*name, opts);
           }},
          {purge, [purge_name, &opts] {
             return run_purge(*purge_name, opts);
           }}};
}

} // namespace tb::cli
