//
// test/server/support/sink_tls.hpp
//
// A certificate for the TLS sink, made at test time with the OpenSSL API (nothing is
// downloaded, nothing is kept): a self-signed P-256 certificate for "localhost" and
// 127.0.0.1, valid for a day. The test trusts it by giving its PEM file to the client as the
// CA file; a client that does not trust it must refuse the sink.
//

#ifndef TIMEWHEEL_TEST_SERVER_SUPPORT_SINK_TLS_HPP
#define TIMEWHEEL_TEST_SERVER_SUPPORT_SINK_TLS_HPP

#include <boost/asio/ssl/context.hpp>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace timewheel::test {

struct self_signed {
    std::string cert_pem;
    std::string key_pem;
};

inline self_signed make_self_signed(const std::string& common_name = "localhost") {
    auto check = [](bool ok, const char* what) {
        if (!ok)
            throw std::runtime_error(std::string("OpenSSL: ") + what);
    };
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), EVP_PKEY_free);
    check(key != nullptr, "EVP_EC_gen");
    std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), X509_free);
    check(cert != nullptr, "X509_new");
    X509_set_version(cert.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), static_cast<long>(::getpid()));
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
    X509_set_pubkey(cert.get(), key.get());
    auto* name = X509_get_subject_name(cert.get());
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                               0);
    X509_set_issuer_name(cert.get(), name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
    // 127.0.0.1 is in the certificate of "localhost" only, so that a certificate for
    // another name matches neither the name nor the address of the sink.
    const std::string san =
        "DNS:" + common_name + (common_name == "localhost" ? ",IP:127.0.0.1" : "");
    for (auto [nid, value] : {std::pair{NID_subject_alt_name, san.c_str()},
                              std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
        X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
        check(ext != nullptr, "X509V3_EXT_conf_nid");
        X509_add_ext(cert.get(), ext, -1);
        X509_EXTENSION_free(ext);
    }
    check(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0, "X509_sign");

    auto to_pem = [&](auto write) {
        std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
        check(write(bio.get()) == 1, "PEM_write");
        char* data = nullptr;
        long n = BIO_get_mem_data(bio.get(), &data);
        return std::string(data, static_cast<std::size_t>(n));
    };
    self_signed out;
    out.cert_pem = to_pem([&](BIO* b) { return PEM_write_bio_X509(b, cert.get()); });
    out.key_pem = to_pem([&](BIO* b) {
        return PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
    });
    return out;
}

/// The sink's side: a TLS server context with the certificate and its key.
inline std::shared_ptr<boost::asio::ssl::context> server_context(const self_signed& c) {
    auto ctx = std::make_shared<boost::asio::ssl::context>(boost::asio::ssl::context::tls_server);
    ctx->use_certificate_chain(boost::asio::buffer(c.cert_pem));
    ctx->use_private_key(boost::asio::buffer(c.key_pem), boost::asio::ssl::context::pem);
    return ctx;
}

/// The certificate in a file of its own (removed with the object), for client_options::ca_file.
class pem_file {
public:
    explicit pem_file(const std::string& pem)
        : path_(std::filesystem::temp_directory_path() /
                ("timewheeld-test-ca-" + std::to_string(::getpid()) + "-" +
                 std::to_string(reinterpret_cast<std::uintptr_t>(this)) + ".pem")) {
        std::ofstream(path_) << pem;
    }
    ~pem_file() {
        std::error_code ec;
        std::filesystem::remove(path_, ec);
    }
    pem_file(const pem_file&) = delete;
    pem_file& operator=(const pem_file&) = delete;
    std::string path() const { return path_.string(); }

private:
    std::filesystem::path path_;
};

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_SERVER_SUPPORT_SINK_TLS_HPP
