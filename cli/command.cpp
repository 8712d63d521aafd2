#include "cli/command.h"

namespace zt::cli {

std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

Registration::Registration(Command command) { registry().push_back(std::move(command)); }

}  // namespace zt::cli
