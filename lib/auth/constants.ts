/** Sign-in links work once (next-auth deletes the token when it is used) and for 15 minutes. */
export const SIGNIN_LINK_MINUTES = 15;
