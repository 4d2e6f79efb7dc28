"""The receiver helper on its own, without a service: the example of docs/server.md ("The
signature") verifies, and every malformed or missing part is refused with its reason. What
the real service signs is checked in test_timewheeld.py.
"""

import unittest

from timewheel_client import SignatureError, Verifier, canonical_text, wsgi_headers

DOC_HEADERS = {
    "Timewheel-Signature": "t=1700000000,v2=801b3dee032e4b9d32d9658eb4bae0770e98bcaf15062276e93b1bcbff01609f",
    "Idempotency-Key": "order-42",
    "Timewheel-Attempt": "1",
}
DOC_URL = "https://hooks.example.com/orders"
DOC_BODY = b'{"order": 42}'


def verifier(*secrets, now=1700000000):
    return Verifier(list(secrets) or ["shared-secret"], clock=lambda: now)


class TheDocumentedExample(unittest.TestCase):
    def test_the_example_of_the_docs_verifies(self):
        verifier().verify("POST", DOC_URL, DOC_HEADERS, DOC_BODY)

    def test_header_names_are_found_in_any_case(self):
        verifier().verify("POST", DOC_URL, {k.lower(): v for k, v in DOC_HEADERS.items()}, DOC_BODY)

    def test_a_wsgi_environ_gives_the_headers(self):
        environ = {"HTTP_TIMEWHEEL_SIGNATURE": DOC_HEADERS["Timewheel-Signature"],
                   "HTTP_IDEMPOTENCY_KEY": "order-42", "HTTP_TIMEWHEEL_ATTEMPT": "1",
                   "wsgi.input": object()}
        verifier().verify("POST", DOC_URL, wsgi_headers(environ), DOC_BODY)

    def test_the_canonical_text_is_six_lines_without_a_final_newline(self):
        self.assertEqual(canonical_text("1", "POST", "u", "k", "2", b"a\n"), b"1\nPOST\nu\nk\n2\na\n")


class RefusedWithAReason(unittest.TestCase):
    def refused(self, reason, headers=None, body=DOC_BODY, v=None, method="POST", url=DOC_URL):
        with self.assertRaises(SignatureError) as caught:
            (v or verifier()).verify(method, url, DOC_HEADERS if headers is None else headers, body)
        self.assertEqual(caught.exception.reason, reason)

    def changed(self, **values):
        headers = dict(DOC_HEADERS)
        for name, value in values.items():
            name = name.replace("_", "-")
            if value is None:
                headers.pop(name)
            else:
                headers[name] = value
        return headers

    def test_a_missing_header_is_refused_as_missing(self):
        for name in ("Timewheel_Signature", "Idempotency_Key", "Timewheel_Attempt"):
            self.refused("missing", self.changed(**{name: None}))

    def test_a_header_without_t_or_v2_or_with_a_bad_t_is_malformed(self):
        for value in ("v2=abc", "t=1700000000", "t=17000x0000,v2=ab", "t=1,t=2,v2=ab", "garbage",
                      "t=\u0661\u0662,v2=ab"):
            self.refused("malformed", self.changed(Timewheel_Signature=value))

    def test_a_t_beyond_the_tolerance_either_way_is_expired(self):
        self.refused("expired", v=verifier(now=1700000000 + 301))
        self.refused("expired", v=verifier(now=1700000000 - 301))
        verifier(now=1700000000 + 300).verify("POST", DOC_URL, DOC_HEADERS, DOC_BODY)

    def test_a_v1_entry_alone_never_verifies(self):
        self.refused("malformed", self.changed(Timewheel_Signature="t=1700000000,v1=801b3dee"))

    def test_any_other_part_changed_is_a_mismatch(self):
        self.refused("mismatch", body=DOC_BODY + b" ")
        self.refused("mismatch", method="PUT")
        self.refused("mismatch", url=DOC_URL + "/")
        self.refused("mismatch", self.changed(Idempotency_Key="order-43"))
        self.refused("mismatch", self.changed(Timewheel_Attempt="2"))
        self.refused("mismatch", v=verifier("another-secret"))

    def test_a_parsed_or_decoded_body_is_a_type_error(self):
        for body in ({"order": 42}, DOC_BODY.decode()):
            with self.assertRaises(TypeError):
                verifier().verify("POST", DOC_URL, DOC_HEADERS, body)

    def test_no_secret_or_an_empty_one_is_refused_at_construction(self):
        for secrets in ([], [""], ""):
            with self.assertRaises(ValueError):
                Verifier(secrets)


if __name__ == "__main__":
    unittest.main()
