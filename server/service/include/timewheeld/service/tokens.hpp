//
// timewheeld/service/tokens.hpp
//
// Who may call the API: bearer tokens, each with a scope. The tokens file (--tokens-file)
// holds one token per line as its SHA-256, never the token itself, so that a copy of the
// file (a backup, a config repository) opens nothing:
//
//     # SCOPE  sha256:HEX                                                         [NAME]
//     write    sha256:5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8 ci
//     read     sha256:...                                                          grafana
//
// A scope includes the ones below it: read (GET and HEAD), write (every route that changes
// tasks, dead letters and schedules), admin (everything; the queues' and tenants' settings
// when they come). A presented token is hashed and compared with every entry, each in
// constant time, so the time of an answer says nothing about which entries came close.
//
#ifndef TIMEWHEELD_SERVICE_TOKENS_HPP
#define TIMEWHEELD_SERVICE_TOKENS_HPP

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace timewheeld::service {

/// What a token may do; each includes the ones before it.
enum class scope { read = 1, write = 2, admin = 3 };

/// "read", "write", "admin".
std::string_view to_string(scope s) noexcept;

/// A SHA-256 digest.
using sha256_digest = std::array<unsigned char, 32>;

/// The SHA-256 of `data`.
sha256_digest sha256(std::string_view data);

/// The tokens the API accepts.
class token_set {
public:
    /// One accepted token.
    struct entry {
        scope what;
        sha256_digest digest;
        std::string name; ///< for the log; may be empty
    };

    /// The entries of a tokens file's text (format above).
    /** @throws std::invalid_argument naming the line and what is wrong in it: an unknown
        scope, a digest that is not 64 hex digits after "sha256:", a digest listed twice. */
    static token_set parse(std::string_view text);

    /// parse() of the file at `path`.
    /** @throws std::invalid_argument naming the file when it cannot be read, or parse()'s. */
    static token_set read_file(const std::string& path);

    /// Adds `token` itself (the --token setting) with `what`.
    /** @throws std::invalid_argument when the same token is listed already. */
    void add(std::string_view token, scope what, std::string name);

    /// The scope of `presented`, or nothing when it is not one of the tokens.
    std::optional<scope> find(std::string_view presented) const;

    /// The entries, in file order.
    const std::vector<entry>& entries() const noexcept { return entries_; }

    /// Whether no token is set (the API is then open).
    bool empty() const noexcept { return entries_.empty(); }

private:
    void add_digest(const sha256_digest& d, scope what, std::string name, std::size_t line);

    std::vector<entry> entries_;
};

} // namespace timewheeld::service

#endif // TIMEWHEELD_SERVICE_TOKENS_HPP
