// Package deps pins the modules the project is about to use while it is
// being built; it is removed once every module is imported for real.
package deps

import (
	_ "github.com/ThreeDotsLabs/watermill"
	_ "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	_ "github.com/alexedwards/argon2id"
	_ "github.com/gin-gonic/gin"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/google/uuid"
	_ "github.com/pquerna/otp/totp"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/time/rate"
)
