//
// server/service/src/tokens.cpp
//
// The tokens file's parser and the constant-time lookup (tokens.hpp says why the file holds
// digests). OpenSSL's SHA-256 is the callback side's already (its signatures).
//
#include <timewheeld/service/tokens.hpp>

#include <openssl/sha.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace timewheeld::service {

namespace {

std::optional<scope> scope_of(std::string_view word) {
    if (word == "read") {
        return scope::read;
    }
    if (word == "write") {
        return scope::write;
    }
    if (word == "admin") {
        return scope::admin;
    }
    return std::nullopt;
}

std::optional<sha256_digest> digest_of(std::string_view hex) {
    sha256_digest d{};
    if (hex.size() != 2 * d.size()) {
        return std::nullopt;
    }
    for (std::size_t i = 0; i < d.size(); ++i) {
        const char* first = hex.data() + 2 * i;
        const auto [end, ec] = std::from_chars(first, first + 2, d[i], 16);
        if (ec != std::errc() || end != first + 2) {
            return std::nullopt;
        }
    }
    return d;
}

// The next word of `line` (split at spaces and tabs), removed from it.
std::string_view next_word(std::string_view& line) {
    const auto start = line.find_first_not_of(" \t");
    if (start == std::string_view::npos) {
        line = {};
        return {};
    }
    line.remove_prefix(start);
    const auto end = line.find_first_of(" \t");
    const auto word = line.substr(0, end);
    line.remove_prefix(end == std::string_view::npos ? line.size() : end);
    return word;
}

std::invalid_argument line_error(std::size_t line, const std::string& what) {
    return std::invalid_argument("tokens file, line " + std::to_string(line) + ": " + what);
}

} // namespace

std::string_view to_string(scope s) noexcept {
    switch (s) {
    case scope::read:
        return "read";
    case scope::write:
        return "write";
    case scope::admin:
        return "admin";
    }
    return "?";
}

sha256_digest sha256(std::string_view data) {
    sha256_digest d{};
    SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), d.data());
    return d;
}

token_set token_set::parse(std::string_view text) {
    token_set out;
    std::size_t number = 0;
    while (!text.empty()) {
        const auto eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
        ++number;
        if (line.ends_with('\r')) {
            line.remove_suffix(1);
        }
        if (const auto hash = line.find('#'); hash != std::string_view::npos) {
            line = line.substr(0, hash);
        }
        const auto scope_word = next_word(line);
        if (scope_word.empty()) {
            continue; // blank or a comment
        }
        const auto what = scope_of(scope_word);
        if (!what) {
            throw line_error(number, "unknown scope '" + std::string(scope_word) +
                                         "' (expected read, write or admin)");
        }
        const auto digest_word = next_word(line);
        constexpr std::string_view prefix = "sha256:";
        const auto digest = digest_word.starts_with(prefix)
                                ? digest_of(digest_word.substr(prefix.size()))
                                : std::nullopt;
        if (!digest) {
            // The token itself is never echoed: a user who pasted it here must not find it
            // in the log too.
            throw line_error(number, "expected sha256: and 64 hex digits after the scope "
                                     "(the SHA-256 of the token, as `printf %s TOKEN | "
                                     "sha256sum` prints it)");
        }
        const auto name = next_word(line);
        if (!next_word(line).empty()) {
            throw line_error(number, "more than a scope, a digest and a name");
        }
        out.add_digest(*digest, *what, std::string(name), number);
    }
    return out;
}

token_set token_set::read_file(const std::string& path) {
    // Read on the API's first thread, again at every change: a FIFO or a device (a typo,
    // /dev/zero) would block it or grow without end, so only a regular file, and a bounded one
    // (a line is under 100 bytes: 1 MiB is some 10,000 tokens).
    constexpr std::size_t max_bytes = 1 << 20;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
        throw std::invalid_argument("--tokens-file: cannot read '" + path + "'" +
                                    (ec ? ": " + ec.message() : ": not a regular file"));
    }
    std::ifstream in(path, std::ios::binary);
    std::string text(max_bytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (in.bad() || (!in && !in.eof())) {
        throw std::invalid_argument("--tokens-file: cannot read '" + path + "'");
    }
    if (static_cast<std::size_t>(in.gcount()) > max_bytes) {
        throw std::invalid_argument("--tokens-file '" + path + "': larger than 1 MiB");
    }
    text.resize(static_cast<std::size_t>(in.gcount()));
    try {
        return parse(text);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("--tokens-file '" + path + "': " + e.what());
    }
}

void token_set::add(std::string_view token, scope what, std::string name) {
    add_digest(sha256(token), what, std::move(name), 0);
}

void token_set::add_digest(const sha256_digest& d, scope what, std::string name, std::size_t line) {
    for (const auto& e : entries_) {
        if (e.digest == d) {
            const std::string what_is = "a token listed twice";
            throw line ? line_error(line, what_is)
                       : std::invalid_argument("--token is also in the tokens file");
        }
    }
    entries_.push_back({what, d, std::move(name)});
}

std::optional<scope> token_set::find(std::string_view presented) const {
    const auto d = sha256(presented);
    // Every entry is compared whole, matched or not: the time depends on the number of
    // entries alone. Digests are distinct (add_digest), so at most one matches.
    int found = 0;
    for (const auto& e : entries_) {
        unsigned char diff = 0;
        for (std::size_t i = 0; i < d.size(); ++i) {
            diff |= static_cast<unsigned char>(d[i] ^ e.digest[i]);
        }
        const int match = static_cast<int>((static_cast<unsigned>(diff) - 1U) >> 8U & 1U);
        found |= match * static_cast<int>(e.what);
    }
    if (found == 0) {
        return std::nullopt;
    }
    return static_cast<scope>(found);
}

} // namespace timewheeld::service
