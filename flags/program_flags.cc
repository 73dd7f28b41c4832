#include "flags/program_flags.h"

#include <cstdlib>
#include <iostream>

#include "absl/flags/internal/parse.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#ifndef GPHKV_VERSION
#define GPHKV_VERSION "0.0.0"
#endif

namespace gphkv {

std::vector<char*> ParseProgramFlags(int argc, char** argv, const ProgramUsage& program) {
  absl::SetProgramUsageMessage(program.usage);
  absl::FlagsUsageConfig config;
  // Copies: the config outlives the caller's ProgramUsage.
  config.contains_help_flags = [files = program.flag_files](absl::string_view path) {
    for (const std::string& file : files) {
      if (absl::EndsWith(path, file)) return true;
    }
    return false;
  };
  config.contains_helpshort_flags = config.contains_help_flags;
  config.version_string = [name = program.name] { return absl::StrCat(name, " ", GPHKV_VERSION, "\n"); };
  absl::SetFlagsUsageConfig(config);
  // absl::ParseCommandLine would handle the usage flags itself and exit 1 after
  // --help; so parse with them left alone (the implementation it calls, with
  // kIgnoreUsage), then answer them here and exit 0.
  std::vector<char*> positional = absl::flags_internal::ParseCommandLineImpl(
      argc, argv, absl::flags_internal::ArgvListAction::kRemoveParsedArgs,
      absl::flags_internal::UsageFlagsAction::kIgnoreUsage, absl::flags_internal::OnUndefinedFlag::kAbortIfUndefined);
  // HandleUsageFlags returns -1 when no usage flag was given; after printing
  // the help it returns 1, the status Abseil exits with, and 0 after --version
  // or --only_check_args. Every one of them did what was asked: exit 0.
  if (absl::flags_internal::HandleUsageFlags(std::cout, absl::ProgramUsageMessage()) >= 0) {
    std::cout.flush();
    std::exit(0);
  }
  return positional;
}

}  // namespace gphkv
