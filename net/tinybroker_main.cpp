// tinybroker: starts the broker on built-in defaults or a TOML config and
// runs it until SIGTERM or SIGINT.

#include "net/broker_main.hpp"

int main(int argc, char** argv) {
  return tb::run_broker(argc, argv, "tinybroker");
}
