#include "net/stats_collector.hpp"

namespace tb {

void collect_stats(stats_sources, const tinybroker::v1::StatsRequest&,
                   stats_callback done) {
  tinybroker::v1::StatsReply reply;
  done(reply, make_error_info(ec::unimplemented, "Stats is being built"));
}

} // namespace tb
