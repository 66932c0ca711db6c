package crypto

// An envelope seals a small value with a data key of its own, which is
// kept beside it wrapped by the master key: nothing but the master key
// opens it, and no key table is needed (an outlet's credentials, in the
// log and in the read model, are sealed so). An attempt's raw texts are
// sealed the same way (delivery), their key shared by the two texts.

// SealEnvelope seals plaintext with a fresh data key bound to aad and
// returns the key wrapped by the master key, and the sealed bytes.
func (k *Keyring) SealEnvelope(plaintext, aad []byte) (wrappedKey, sealed []byte, err error) {
	plain, wrappedKey, err := k.NewDataKey()
	if err != nil {
		return nil, nil, err
	}
	if sealed, err = Seal(plain, plaintext, aad); err != nil {
		return nil, nil, err
	}
	return wrappedKey, sealed, nil
}

// OpenEnvelope opens what SealEnvelope sealed; ErrDecrypt when the master
// key, the wrapped key, the sealed bytes or aad do not match.
func (k *Keyring) OpenEnvelope(wrappedKey, sealed, aad []byte) ([]byte, error) {
	plain, err := k.Unwrap(wrappedKey)
	if err != nil {
		return nil, err
	}
	return Open(plain, sealed, aad)
}
