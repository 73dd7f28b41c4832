// How a gphkv program parses its command line: Abseil's flags, with the
// usage flags (--help, --helpshort, --helpfull, --helpmatch=S, --helpon=F,
// --version) answered on stdout with exit status 0, as a person's shell and
// scripts expect (Abseil 20220623, Debian 12's, exits 1 after --help).
#pragma once

#include <string>
#include <vector>

namespace gphkv {

struct ProgramUsage {
  // The program's name as a user types it ("gphkv-server"): --version prints it
  // with the project's version, and the usage's first line names it.
  std::string name;
  // What --help prints after "NAME: ": a line on what the program is, then
  // "Usage: NAME ..." and how it is called.
  std::string usage;
  // The source files (paths from the project root, e.g. "server/main.cc") whose
  // flags --help and --helpshort list. Abseil's default looks for a file named
  // after the binary, which no hyphenated name matches, and would list nothing.
  std::vector<std::string> flag_files;
};

// Parses argc/argv into the program's flags and returns the positional
// arguments, argv[0] first. A usage flag prints what it asks for on stdout and
// exits 0; an undefined flag or a bad value prints why on stderr and exits 1
// (Abseil's behaviour). Call once, first thing in main().
std::vector<char*> ParseProgramFlags(int argc, char** argv, const ProgramUsage& program);

}  // namespace gphkv
