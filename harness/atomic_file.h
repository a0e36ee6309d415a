// Writing result and comparison files so that a reader never sees half of one.
#pragma once

#include <string>

namespace walbench {

// Writes `<path>.tmp`, fsyncs it, renames it over `path` and fsyncs the directory. Throws
// std::runtime_error naming the path on any failure.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace walbench
